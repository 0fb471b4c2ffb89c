"""The budget — tokens and dollars — as one policy every backend obeys
(docs/explanation/rules.md#budgets): each backend's usage comes in, counted once whatever shape its
provider reports it in (`usage`), and a decision comes out: go on, or stop.

`meter`: one agent's own figures and its check (the built-in agent before a
model call, an agent CLI as its stream says each call); `allot`: what a
child may spend of its tree's budget, carved as it is spawned; `tree`: a run
and everything it started, checked before each of the run's calls and as a
backstop. Imports the kernel (`ledger`, `prices`, `config`), `zapcli.trail`
and `zapcli.lifecycle`; never a backend, a verb or a surface: they feed it,
and carry out what it decides with their own hands.
"""
