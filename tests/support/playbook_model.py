"""Valid playbooks as data, each with what it must compile to: the fuzzers' model of the playbook engine.

A `PlaybookSpec` is drawn by `PLAYBOOKS`; `documents()` writes it as the YAML files a user would (the
playbook, one role's tasks and defaults, the inventory) and `expected_plays()` says, without asking
the engine, which hosts each play selects, which tasks run (in order, role tasks first, after
--tags/--skip-tags) and, per host, whether each is skipped or the arguments it renders to, per
loop item. Argument values are literal text, play variables, role defaults, `item` and
`inventory_hostname`, alone or inside text; the text is hostile ($(...), escapes, quotes) but never
Jinja, so it must come back exactly as written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

INVENTORY = {"all": {"children": {"gpu": {"hosts": {"h1": {"ansible_host": "10.0.0.1"},
                                                    "h2": {"ansible_host": "10.0.0.2"}}},
                                  "cpu": {"hosts": {"h3": {"ansible_host": "10.0.0.3"}}}}}}
HOSTS = ("h1", "h2", "h3")  # inventory order
GROUPS = {"h1": ("gpu",), "h2": ("gpu",), "h3": ("cpu",)}
PATTERNS = {"all": HOSTS, "gpu": ("h1", "h2"), "cpu": ("h3",), "h2": ("h2",), "gpu:!h1": ("h2",),
            "h3:h1": ("h1", "h3"), "gpu:&h2": ("h2",), "h*": HOSTS}
CONDITIONS = {"true": lambda host: True, "false": lambda host: False,
              "inventory_hostname == 'h1'": lambda host: host == "h1",
              "inventory_hostname != 'h2'": lambda host: host != "h2",
              "'gpu' in group_names": lambda host: "gpu" in GROUPS[host]}
TAG_SELECTIONS = ((("all",), ()), (("a",), ()), (("all",), ("b",)), (("a", "b"), ("b",)))
ROLE = "fuzzrole"
DEFAULT_MODE = {"put_file": 0o644, "directory": 0o755}

TEXT = st.one_of(
    st.sampled_from(["", " ", "$(touch /tmp/canary)", "`id`", "; rm -rf /", "../..", "/etc/passwd", "\x1b[31m",
                     "a\nb", "'", '"', "\\", "100%", "-rf", "é", "\u202e", "null", "yes", "~", "{", "}", "#"]),
    st.text(max_size=10)).filter(lambda text: not any(mark in text for mark in ("{{", "{%", "{#")))
# Text inside a template: Jinja reads "\r\n" as "\n" and a trailing "{" would open "{{{".
JINJA_TEXT = TEXT.filter(lambda text: "\r" not in text and not text.endswith("{"))
NAME = st.one_of(st.sampled_from(["config", "weights dir", "current link", "$(id)", "é"]),
                 st.text(min_size=1, max_size=8)).filter(str.strip)


@dataclass(frozen=True)
class Value:
    """One argument as written (`text`), and what it renders to on `host` for loop `item`."""

    text: str
    kind: str   # literal | var | default | item | host | concat
    literal: str = ""
    var: str = ""

    def rendered(self, host: str, item: str | None, variables: dict[str, str]) -> str | None:
        match self.kind:
            case "literal":
                return self.literal
            case "var" | "default":
                return variables[self.var]
            case "item":
                return item
            case "host":
                return host
            case "concat":
                return self.literal + variables[self.var] + "/" + host
        raise ValueError(self.kind)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    operation: str                     # put_file | directory | symlink
    args: dict[str, Value]
    mode: tuple[Any, int] | None       # (as written, as read) when given
    when: str | None
    loop: tuple[str, ...] | None
    tags: tuple[str, ...]

    def document(self) -> dict:
        args = {name: value.text for name, value in self.args.items()}
        if self.mode is not None:
            args["mode"] = self.mode[0]
        task: dict = {"name": self.name, self.operation: args}
        if self.when is not None:
            task["when"] = self.when
        if self.loop is not None:
            task["loop"] = list(self.loop)
        if self.tags:
            task["tags"] = list(self.tags)
        return task

    def expected_args(self, host: str, item: str | None, variables: dict[str, str]) -> dict:
        args = {name: value.rendered(host, item, variables) for name, value in self.args.items()}
        if self.operation in DEFAULT_MODE:
            args["mode"] = self.mode[1] if self.mode is not None else DEFAULT_MODE[self.operation]
        return args


@dataclass(frozen=True)
class PlaySpec:
    name: str
    hosts: str
    variables: dict[str, str]
    tags: tuple[str, ...]
    uses_role: bool
    tasks: tuple[TaskSpec, ...]

    def document(self) -> dict:
        play: dict = {"name": self.name, "hosts": self.hosts}
        if self.variables:
            play["vars"] = dict(self.variables)
        if self.tags:
            play["tags"] = list(self.tags)
        if self.uses_role:
            play["roles"] = [ROLE]
        play["tasks"] = [task.document() for task in self.tasks]
        return play


@dataclass(frozen=True)
class PlaybookSpec:
    plays: tuple[PlaySpec, ...]
    role_tasks: tuple[TaskSpec, ...]
    role_defaults: dict[str, str]
    tags: tuple[str, ...]
    skip_tags: tuple[str, ...]

    def documents(self) -> dict[str, Any]:
        """Each file's path (relative to the playbook's folder) and its YAML data."""
        return {"play.yml": [play.document() for play in self.plays], "hosts.yml": INVENTORY,
                f"roles/{ROLE}/tasks/main.yml": [task.document() for task in self.role_tasks],
                f"roles/{ROLE}/defaults/main.yml": dict(self.role_defaults)}

    def expected_plays(self) -> list[dict]:
        """Per play: its hosts, and its tasks that run, each (name, operation, {host: None when skipped,
        else the argument dicts per loop item})."""
        plays = []
        for play in self.plays:
            hosts = PATTERNS[play.hosts]
            variables = {**(self.role_defaults if play.uses_role else {}), **play.variables}
            tasks = []
            for task in (self.role_tasks if play.uses_role else ()) + play.tasks:
                if not _runs(set(task.tags) | set(play.tags), self.tags, self.skip_tags):
                    continue
                per_host = {}
                for host in hosts:
                    if task.when is not None and not CONDITIONS[task.when](host):
                        per_host[host] = None
                    else:
                        items = task.loop if task.loop is not None else (None,)
                        per_host[host] = [task.expected_args(host, item, variables) for item in items]
                tasks.append((task.name, task.operation, per_host))
            plays.append({"hosts": hosts, "tasks": tasks})
        return plays


def _runs(tags: set[str], only: tuple[str, ...], skip: tuple[str, ...]) -> bool:
    """--tags / --skip-tags for tasks tagged only a and b (neither 'always' nor 'never')."""
    selected = "all" in only or bool(tags & set(only))
    return selected and not tags & set(skip)


def _values(variables: tuple[str, ...], defaults: tuple[str, ...], in_loop: bool) -> st.SearchStrategy[Value]:
    options = [TEXT.map(lambda text: Value(text, "literal", literal=text)),
               st.just(Value("{{ inventory_hostname }}", "host"))]
    if variables:
        options.append(st.sampled_from(variables).map(lambda var: Value("{{ %s }}" % var, "var", var=var)))
        options.append(st.tuples(JINJA_TEXT, st.sampled_from(variables)).map(
            lambda t: Value(t[0] + "{{ %s }}/{{ inventory_hostname }}" % t[1], "concat", literal=t[0], var=t[1])))
    if defaults:
        options.append(st.sampled_from(defaults).map(lambda var: Value("{{ %s }}" % var, "default", var=var)))
    if in_loop:
        options.append(st.just(Value("{{ item }}", "item")))
    return st.one_of(options)


ARGUMENTS = {"put_file": ("path", "content"), "directory": ("path",), "symlink": ("path", "target")}
MODES = st.sampled_from([(0o600, 0o600), (0o640, 0o640), (493, 0o755), ("0640", 0o640), ("750", 0o750)])


@st.composite
def task_specs(draw, variables: tuple[str, ...], defaults: tuple[str, ...]) -> TaskSpec:
    operation = draw(st.sampled_from(sorted(ARGUMENTS)))
    loop = draw(st.one_of(st.none(), st.lists(TEXT, min_size=0, max_size=3).map(tuple)))
    values = _values(variables, defaults, loop is not None)
    args = {name: draw(values) for name in ARGUMENTS[operation]}
    mode = draw(st.one_of(st.none(), MODES)) if operation in DEFAULT_MODE else None
    return TaskSpec(draw(NAME), operation, args, mode, draw(st.one_of(st.none(), st.sampled_from(sorted(CONDITIONS)))),
                    loop, tuple(draw(st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True))))


@st.composite
def playbook_specs(draw) -> PlaybookSpec:
    defaults = {f"r{index}": text for index, text in enumerate(draw(st.lists(TEXT, max_size=2)))}
    role_tasks = tuple(draw(st.lists(task_specs((), tuple(defaults)), max_size=2)))
    plays = []
    for _ in range(draw(st.integers(1, 2))):
        variables = {f"v{index}": text for index, text in enumerate(draw(st.lists(TEXT, max_size=3)))}
        uses_role = draw(st.booleans())
        tasks = tuple(draw(st.lists(task_specs(tuple(variables), tuple(defaults) if uses_role else ()), max_size=3)))
        plays.append(PlaySpec(draw(NAME), draw(st.sampled_from(sorted(PATTERNS))), variables,
                              tuple(draw(st.lists(st.sampled_from(["a", "b"]), max_size=1))), uses_role, tasks))
    tags, skip_tags = draw(st.sampled_from(TAG_SELECTIONS))
    return PlaybookSpec(tuple(plays), role_tasks, defaults, tags, skip_tags)


PLAYBOOKS = playbook_specs()
