"""Shell completion scripts (bash, zsh, fish) rendered from the command table,
and `zapcli __complete cli|executor`, which they run for those values.

Imports nothing but the table it is given ("cmd" and "group sub" entries);
the registries when a script is rendered (their built-in names, the answer
when zapcli cannot be run) or `__complete` answers (every name: plugins and
config.yaml's backends too). Ids and definition names complete from files
(the state folder, the system and workspace definition folders), without
starting Python: the same POSIX sh snippet in every shell (fish runs it
with `sh -c`, since `${VAR:-default}` is not fish).

What completes where comes from the table alone: a positional argument
named `id`/`ids` takes subagent ids, `name` definition names, `file` file
names, `shell` bash, zsh or fish; an option whose metavar is ID takes ids, FILE or PATH files, DIR
folders; `_VALUES` and `_ASKED` give the fixed and the asked value lists.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BUILTINS = "general explorer code-reviewer test-runner fixer"
_GROUP_HELP = {"agents": "List, show, save and manage subagent definitions"}
_VALUES = {
    "--approval": "confirm workspace auto-edit full",
    "--status": "queued running awaiting_approval completed failed timeout cancelled lost interrupted",
    "--scope": "system workspace",
    "--to": "system workspace",
}
_IDS_SH = ('ls "${ZAPCLI_HOME:-${XDG_STATE_HOME:-$HOME/.local/state}/zapcli}/subagents" 2>/dev/null'
           ' | sed -n "s/\\.jsonl$//p"')
# Definition names: the built-ins, plus the file names in the system and workspace folders.
_NAMES_SH = (f"printf '%s\\n' {_BUILTINS}; " 'ls "${ZAPCLI_CONFIG_HOME:-${XDG_CONFIG_HOME:-$HOME/.config}/zapcli}'
             '/subagents" "$(git rev-parse --show-toplevel 2>/dev/null || pwd)/.zapcli/subagents"'
             ' 2>/dev/null | sed -n "s/\\.ya\\{0,1\\}ml$//p"')


_ASKED = {"--cli": "cli", "--executor": "executor", "--attempt-cli": "cli"}  # `zapcli __complete KIND`


def answer(kind: str) -> int:
    """`zapcli __complete KIND`: the values of --cli or --executor, one a line
    (a broken plugin is left out; its warning goes to stderr)."""
    import sys

    if kind == "cli":
        from zapcli.backends import registry
        from zapcli.backends.sections import OWNERS
        from zapcli.config import load_settings

        names = registry.names(registry.configured(load_settings(lenient=True, owners=OWNERS)))
    elif kind == "executor":
        from zapcli import executors

        names = executors.names()
    else:
        return 2
    sys.stdout.write("".join(f"{n}\n" for n in names))
    return 0


def _builtin(kind: str) -> str:
    """The built-in names, for when the installed zapcli cannot answer."""
    if kind == "cli":
        from zapcli.backends.registry import BUILTIN
    else:
        from zapcli.executors import BUILTIN
    return " ".join(BUILTIN)


def _asked_sh(kind: str, prog: str) -> str:
    """Shell words: what `zapcli __complete KIND` says, else the built-ins."""
    return f'{prog} __complete {kind} 2>/dev/null || echo {_builtin(kind)}'


def _split(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    top = {k: v for k, v in spec.items() if " " not in k}
    groups: dict[str, dict[str, Any]] = {}
    for k, v in spec.items():
        if " " in k:
            g, sub = k.split(" ", 1)
            groups.setdefault(g, {})[sub] = v
    return top, groups


def public(entry: dict[str, Any]) -> dict[str, Any]:
    """A command's entry without its hidden options (`run --subagent --id`, the
    child form): what --help and the references show, the scripts offer."""
    hidden = {entry["options"][o][0] for o in entry.get("option_hidden", ())}
    return {**entry, "options": {o: v for o, v in entry["options"].items() if v[0] not in hidden}}


def render(shell: str, spec: dict[str, Any]) -> str:
    spec = {name: public(entry) for name, entry in spec.items()}
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](spec)


DESCRIBED_MAX = 60  # characters of a description fish shows beside a candidate


def _text(text: str) -> str:
    """One line of help, without rich markup."""
    return (text or "").split("\n")[0].replace("[bold]", "").replace("[/]", "").strip()


def _short(text: str, limit: int = DESCRIBED_MAX) -> str:
    """A description to show beside a candidate: the help's first sentence,
    without its asides (parentheses, then what follows a `;`) when that is
    too long, and cut at a word with `…` if it still is."""
    import re

    text = re.split(r"(?<!e\.g)(?<!i\.e)\.(?:\s|$)", _text(text), maxsplit=1)[0].strip()
    if len(text) > limit:
        text = re.sub(r"\s*\([^()]*\)", "", text)
    if len(text) > limit:
        text = text.split("; ")[0]
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(",:;") + "…"
    return text


def _first(v: dict[str, Any]) -> str:
    return _text(v.get("help") or "")


def _opts(v: dict[str, Any]) -> list[str]:
    return sorted({*v["options"], "--help"})


def _arg_kind(dest: str) -> str:
    """What a positional argument takes: ids, names, files, dirs (a PATH: `trust`'s
    folder), shells (`completion install|show`), or "" (free text)."""
    return {"id": "ids", "ids": "ids", "name": "names", "file": "files", "path": "dirs",
            "shell": "shells"}.get(dest, "")


def _value_kind(opt: str, v: dict[str, Any]) -> str:
    """What an option's value takes: values, asked, ids, names, files, dirs or ""."""
    if opt in _VALUES:
        return "values"
    if opt in _ASKED:
        return "asked"
    if opt == "--agent":
        return "names"
    meta = v.get("option_meta", {}).get(opt) or ""
    return {"ID": "ids", "FILE": "files", "PATH": "files", "DIR": "dirs"}.get(meta, "")


def _first_arg(v: dict[str, Any]) -> str:
    return _arg_kind(v["args"][0][0]) if v["args"] else ""


def _bash_arg(v: dict[str, Any]) -> str:
    """The bash script's `arg`: the first positional's kind; `idlist` when
    every positional is an id (`poll ID...`)."""
    if v["args"] and v["args"][0][2] == -1 and _first_arg(v) == "ids":
        return "idlist"
    return _first_arg(v) or "none"


# -- bash ---------------------------------------------------------------------

_SHELLS = "bash zsh fish"  # `completion install|show SHELL`
_BASH_WORDS = {"ids": f'$({_IDS_SH})', "names": f'$({_NAMES_SH})', "shells": _SHELLS}


def _bash_positional(kind: str, indent: str) -> str:
    if kind in _BASH_WORDS:
        return f'{indent}COMPREPLY=( $(compgen -W "{_BASH_WORDS[kind]}" -- "$cur") )'
    if kind == "files":
        return f'{indent}COMPREPLY=( $(compgen -f -- "$cur") )'
    if kind == "dirs":
        return f'{indent}COMPREPLY=( $(compgen -d -- "$cur") )'
    return f"{indent}:"


def _bash(spec: dict[str, Any]) -> str:
    top, groups = _split(spec)
    cases = "\n".join(f'        {cmd}) opts="{" ".join(_opts(v))}"; arg={_bash_arg(v)} ;;'
                      for cmd, v in top.items())
    gcases = "\n".join(
        f'        {g}) if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=( $(compgen -W "{" ".join(subs)}" -- "$cur") ); return; fi\n'
        f'           first=3\n'
        f'           case "${{COMP_WORDS[2]}}" in\n'
        + "\n".join(f'               {sub}) opts="{" ".join(_opts(v))}"; arg={_bash_arg(v)} ;;'
                    for sub, v in subs.items())
        + "\n           esac ;;" for g, subs in groups.items())
    by_kind: dict[str, set[str]] = {}
    for v in spec.values():
        for opt in v["options"]:
            kind = _value_kind(opt, v)
            if kind not in ("", "values", "asked"):
                by_kind.setdefault(kind, set()).add(opt)
    values = "\n".join(f'        {opt}) COMPREPLY=( $(compgen -W "{words}" -- "$cur") ); return ;;'
                       for opt, words in _VALUES.items())
    values += "".join(f'\n        {opt}) COMPREPLY=( $(compgen -W "$({_asked_sh(kind, chr(34) + "${COMP_WORDS[0]}" + chr(34))})"'
                      ' -- "$cur") ); return ;;' for opt, kind in _ASKED.items())
    for kind, opts in sorted(by_kind.items()):
        action = {"dirs": 'COMPREPLY=( $(compgen -d -- "$cur") )',
                  "files": 'COMPREPLY=( $(compgen -f -- "$cur") )'}.get(
            kind, f'COMPREPLY=( $(compgen -W "{_BASH_WORDS.get(kind, "")}" -- "$cur") )')
        values += f'\n        {"|".join(sorted(opts))}) {action}; return ;;'
    valued = sorted({o for v in spec.values() for o, (_d, k, _m) in v["options"].items() if k != "flag"}
                    - set(_VALUES) - set(_ASKED) - {o for opts in by_kind.values() for o in opts})
    return f"""# bash completion for zapcli -- GENERATED by `make completions`; do not edit.
_zapcli() {{
    local cur cmd opts arg first=2 i n=0
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=( $(compgen -W "{' '.join([*top, *groups])} --help -h --version" -- "$cur") )
        return
    fi
    cmd="${{COMP_WORDS[1]}}"
    case "$cmd" in
{cases}
{gcases}
    esac
    case "${{COMP_WORDS[COMP_CWORD-1]}}" in
{values}
        {'|'.join(valued)}) return ;;
    esac
    if [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
        return
    fi
    # the first positional argument completes by its kind (ids, names, files)
    for (( i = first; i < COMP_CWORD; i++ )); do
        [[ "${{COMP_WORDS[i]}}" == -* ]] || n=$((n + 1))
    done
    if [ "$arg" = idlist ] || [ "$n" -eq 0 ]; then
        case "$arg" in
{_bash_positional("ids", "            ids|idlist) ")} ;;
{_bash_positional("names", "            names) ")} ;;
{_bash_positional("files", "            files) ")} ;;
{_bash_positional("dirs", "            dirs) ")} ;;
{_bash_positional("shells", "            shells) ")} ;;
        esac
    fi
}}
complete -F _zapcli zapcli
"""


# -- zsh ----------------------------------------------------------------------

_ZSH_ACTION = {"ids": "_zapcli_ids", "names": "_zapcli_names", "files": "_files",
               "dirs": "_directories", "shells": f"({_SHELLS})", "": " "}


def _zq(text: str) -> str:
    """Text for inside a single-quoted zsh word."""
    return text.replace("'", "'\\''")


def _zsh_opt(opt: str, v: dict[str, Any], aliases: list[str]) -> str:
    _dest, kind, multiple = v["options"][opt]
    help_ = _text(v.get("option_help", {}).get(opt, "")).replace("[", "(").replace("]", ")")
    help_ = help_.replace("\\", "\\\\")
    # repeatable: offered again; aliases (-l, --long): one excludes the other
    prefix = "*" if multiple else (f"({' '.join(aliases)})" if len(aliases) > 1 else "")
    if kind == "flag":
        return f"'{prefix}{opt}[{_zq(help_)}]'"
    meta = (v.get("option_meta", {}).get(opt) or kind).lower()
    value = _value_kind(opt, v)
    if value == "values":
        action = f"({_VALUES[opt]})"
    elif value == "asked":
        action = f"_zapcli_{_ASKED[opt]}"
    else:
        action = _ZSH_ACTION[value]
    return f"'{prefix}{opt}[{_zq(help_)}]:{meta}:{action}'"


def _zsh_args(v: dict[str, Any]) -> str:
    by_dest: dict[str, list[str]] = {}
    for opt, (dest, _k, _m) in v["options"].items():
        by_dest.setdefault(dest, []).append(opt)
    opts = [_zsh_opt(o, v, sorted(by_dest[v["options"][o][0]])) for o in sorted(v["options"])]
    positional = []
    for i, (dest, _kind, nargs, required) in enumerate(v["args"], 1):
        where = "*" if nargs == -1 else str(i)
        optional = ":" if not required and nargs != -1 else ""
        positional.append(f"'{where}:{optional}{dest}:{_ZSH_ACTION[_arg_kind(dest)]}'")
    return " ".join(["-s", "-S", *opts, "'(- *)'{-h,--help}'[Show help]'", *positional])


def _zsh_described(items: list[tuple[str, str]]) -> str:
    return " ".join(f"'{name}:{_zq(desc).replace(':', chr(92) + ':')}'" for name, desc in items)


def _zsh(spec: dict[str, Any]) -> str:
    top, groups = _split(spec)
    items = [(cmd, _first(v)) for cmd, v in top.items()] + [(g, _GROUP_HELP.get(g, g)) for g in groups]
    cases = "\n".join(f"        {cmd}) _arguments {_zsh_args(v)} ;;" for cmd, v in top.items())
    for g, subs in groups.items():
        sub_cases = "\n".join(f"                {sub}) _arguments {_zsh_args(v)} ;;"
                              for sub, v in subs.items())
        cases += (f"\n        {g})\n            if (( CURRENT == 2 )); then\n"
                  f"                local -a subs; subs=({_zsh_described([(s, _first(v)) for s, v in subs.items()])})\n"
                  f"                _describe '{g} command' subs; return\n"
                  f"            fi\n"
                  f"            local sub=$words[2]; shift words; (( CURRENT-- ))\n"
                  f"            curcontext=\"${{curcontext%:*}}-$sub:\"\n"
                  f"            case $sub in\n{sub_cases}\n            esac ;;")
    return f"""#compdef zapcli
# zsh completion for zapcli -- GENERATED by `make completions`; do not edit.
# Put this file, named _zapcli, in a folder on $fpath (`zapcli completion install zsh`
# does), or `source` it after compinit.
_zapcli_ids() {{ compadd -- $({_IDS_SH}) }}
_zapcli_names() {{ compadd -- $({_NAMES_SH}) }}
_zapcli_cli() {{ compadd -- $({_asked_sh("cli", "$_zapcli_prog")}) }}
_zapcli_executor() {{ compadd -- $({_asked_sh("executor", "$_zapcli_prog")}) }}
_zapcli() {{
    local curcontext="$curcontext" _zapcli_prog=${{~words[1]}}
    if (( CURRENT == 2 )); then
        local -a commands
        commands=({_zsh_described(items)})
        _describe 'command' commands
        _arguments '(- *)'{{-h,--help}}'[Show help]' '(- *)--version[Print the version]'
        return
    fi
    local cmd=$words[2]
    shift words; (( CURRENT-- ))
    curcontext="${{curcontext%:*:*}}:zapcli-$cmd:"
    case $cmd in
{cases}
    esac
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _zapcli "$@"
else
    compdef _zapcli zapcli
fi
"""


# -- fish ---------------------------------------------------------------------

def _fq(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


_FISH_ARGS = {"ids": "(__zapcli_ids)", "names": "(__zapcli_names)", "files": "(__fish_complete_path)",
              "dirs": "(__fish_complete_directories)", "shells": _SHELLS}


def _fish_opt(cond: str, opt: str, v: dict[str, Any]) -> str:
    _dest, kind, _multiple = v["options"][opt]
    help_ = _fq(_short(v.get("option_help", {}).get(opt, "")))
    flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
    head = f"complete -c zapcli -n '{cond}' {flag}"
    if kind == "flag":
        return f"{head} -d '{help_}'"
    value = _value_kind(opt, v)
    if value == "values":
        return f"{head} -x -a '{_VALUES[opt]}' -d '{help_}'"
    if value == "asked":
        return f"{head} -x -a '(__zapcli_asked {_ASKED[opt]})' -d '{help_}'"
    if value in _FISH_ARGS:
        return f"{head} -x -a '{_FISH_ARGS[value]}' -d '{help_}'"
    return f"{head} -x -d '{help_}'"


def _fish_positional(cond: str, v: dict[str, Any]) -> list[str]:
    kind = _first_arg(v)
    if kind == "files":
        return [f"complete -c zapcli -n '{cond}' -F"]
    if kind in _FISH_ARGS:
        return [f"complete -c zapcli -n '{cond}' -a '{_FISH_ARGS[kind]}'"]
    return []


def _fish(spec: dict[str, Any]) -> str:
    top, groups = _split(spec)
    asked = "; ".join(f"case {k}; echo {_builtin(k)} | string split ' '"
                      for k in sorted(set(_ASKED.values())))
    lines = ["# fish completion for zapcli -- GENERATED by `make completions`; do not edit.",
             "# The words of the command line before the cursor that are not options:",
             "# `__zapcli_is spawn` is true while completing `zapcli spawn …`.",
             "function __zapcli_words",
             "    set -l words (commandline -opc)",
             "    for w in $words[2..-1]",
             "        string match -q -- '-*' $w; or echo $w",
             "    end",
             "end",
             "function __zapcli_is",
             "    set -l words (__zapcli_words)",
             "    set -l n (count $argv)",
             "    test (count $words) -ge $n; or return 1",
             "    test \"$words[1..$n]\" = \"$argv\"",
             "end",
             "function __zapcli_none",
             "    test (count (__zapcli_words)) -eq 0",
             "end",
             "function __zapcli_only",
             "    set -l words (__zapcli_words)",
             "    test (count $words) -eq 1; and test \"$words[1]\" = $argv[1]",
             "end",
             f"function __zapcli_ids; sh -c '{_fq(_IDS_SH)}'; end",
             f"function __zapcli_names; sh -c '{_fq(_NAMES_SH)}'; end",
             "function __zapcli_asked",
             "    set -l prog (commandline -opc)[1]",
             "    if command -q $prog; and command $prog __complete $argv[1] 2>/dev/null",
             "        return",
             "    end",
             f"    switch $argv[1]; {asked}; end",
             "end",
             "complete -c zapcli -f",
             "complete -c zapcli -n __zapcli_none -l version -d 'Print the version'",
             "complete -c zapcli -s h -l help -d 'Show help'"]
    for cmd, v in top.items():
        lines.append(f"complete -c zapcli -n __zapcli_none -a {cmd} -d '{_fq(_short(_first(v)))}'")
        cond = f"__zapcli_is {cmd}"
        lines += [_fish_opt(cond, o, v) for o in sorted(v["options"])]
        lines += _fish_positional(cond, v)
    for g, subs in groups.items():
        lines.append(f"complete -c zapcli -n __zapcli_none -a {g} -d '{_fq(_short(_GROUP_HELP.get(g, g)))}'")
        for sub, v in subs.items():
            lines.append(f"complete -c zapcli -n '__zapcli_only {g}' -a {sub} -d '{_fq(_short(_first(v)))}'")
            cond = f"__zapcli_is {g} {sub}"
            lines += [_fish_opt(cond, o, v) for o in sorted(v["options"])]
            lines += _fish_positional(cond, v)
    return "\n".join(lines) + "\n"
