"""A zapcli plugin for zapcli's tests: the `echo` backend and the `echo-local`
executor, found through the entry points `zapcli.backends` and
`zapcli.executors` without a line of zapcli changed for them."""
