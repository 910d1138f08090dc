"""The hybrid plugins' JavaScript half as the library describes it (``syncstore_plugin_api()``):
which action each Cordova function sends with which fields, the query-spec builders, the sync
statuses a run ends with and which plugin answers are retryable. :mod:`syncstore.smartstore` and
:mod:`syncstore.mobilesync` are typed facades over :class:`Service`; nothing here names an action.

Private: the table is read from the library once, at import.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from . import _lib
from .errors import ArgumentError

__all__ = ["table", "Service", "Function", "build_query_spec", "query_spec_default", "retryable", "terminal_statuses"]


@functools.lru_cache(maxsize=None)
def table() -> Dict[str, Any]:
    """The library's table (docs/hybrid-plugin.md, "The JavaScript half")."""
    return dict(_lib.call_json(_lib.lib().syncstore_plugin_api))


class Function:
    """One Cordova function of the table: its action, positional arguments and fixed fields."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.name: str = row["name"]
        self.action: str = row["action"]
        self.args: List[Dict[str, Any]] = [{"name": a, "field": a} if isinstance(a, str) else
                                           {"field": a.get("name"), **a} for a in row.get("args", [])]
        self.fixed: Dict[str, Any] = dict(row.get("fixed") or {})
        self.store_config: bool = bool(row.get("storeConfig"))
        self.removes: Optional[str] = row.get("removes")
        self.run: bool = bool(row.get("run"))
        self.later: bool = bool(row.get("later"))
        self.null_unless: Optional[str] = row.get("nullUnless")
        #: The arguments a call must give (the optional ones excluded).
        self.required = sum(1 for a in self.args if not a.get("optional") and "omittedWhen" not in a)

    def fields(self, args: Sequence[Any]) -> Dict[str, Any]:
        """The args object of a call with these positional arguments (without the storeConfig)."""
        given = list(args)
        fields: Dict[str, Any] = {}
        for spec in self.args:
            omitted = spec.get("omittedWhen")
            if omitted == "string" and (not given or isinstance(given[0], str)):
                value = None  # left out: what follows is the next argument
            elif given:
                value = given.pop(0)
            elif spec.get("optional"):
                value = None
            else:
                raise ArgumentError(f"{self.name} needs its argument {spec['name']!r}")
            member = spec.get("member")
            if member is not None and isinstance(value, Mapping):
                value = value[member]
            if value is None and "default" in spec:
                value = spec["default"]
            fields[spec["field"]] = list(value) if isinstance(value, tuple) else value
        if given:
            raise ArgumentError(f"{self.name} takes {len(self.args)} arguments after the storeConfig, got {len(args)}")
        fields.update(self.fixed)
        return fields


class Service:
    """One plugin service of the table ("smartstore" or "mobilesync")."""

    def __init__(self, key: str) -> None:
        row = table()["services"][key]
        self.service: str = row["service"]
        self.functions: Dict[str, Function] = {f["name"]: Function(f) for f in row["functions"]}
        self.cursor_steps: Dict[str, Dict[str, Any]] = {s["name"]: dict(s) for s in row.get("cursorSteps", [])}
        self.no_store: FrozenSet[str] = frozenset(row.get("noStore", []))

    def function(self, name: str) -> Function:
        return self.functions[name]

    def check(self, names: Sequence[str]) -> None:
        """Fails at import when a facade has no row in the library's table."""
        missing = [n for n in names if n not in self.functions and n not in self.cursor_steps]
        if missing:
            raise ImportError(f"libsyncstore's plugin table has no {', '.join(missing)} of {self.service}: "
                              "the package and the library are of different versions")


def query_spec_default(field: str) -> Any:
    """The default of one member of the query spec (cordova.force.js's QuerySpec)."""
    return table()["querySpec"]["fields"][field]


@functools.lru_cache(maxsize=None)
def _builders() -> Dict[str, Dict[str, Any]]:
    return {b["name"]: b for b in table()["querySpec"]["builders"]}


def build_query_spec(name: str, *args: Any) -> Dict[str, Any]:
    """What cordova.force.js's builder ``name`` returns for these arguments."""
    shape = table()["querySpec"]
    builder = _builders()[name]
    spec: Dict[str, Any] = dict(shape["fields"])
    spec["queryType"] = builder["queryType"]
    falsy_keeps = set(shape.get("falsyKeepsDefault", []))
    for param, value in zip(builder["params"], args):
        field = param if isinstance(param, str) else param["field"]
        if value is None or (field in falsy_keeps and not value):
            continue
        spec[field] = list(value) if isinstance(value, tuple) else value
    source = shape.get("orderPathFrom")
    if source and spec.get("orderPath") is None and builder["queryType"] != "smart":
        spec["orderPath"] = spec.get(source)
    return spec


@functools.lru_cache(maxsize=None)
def _retryable() -> Dict[int, bool]:
    return {int(s["code"]): bool(s.get("retryable")) for s in table()["statuses"]}


def retryable(code: int) -> bool:
    """Whether a plugin answer with this status is retryable (the library's word)."""
    return _retryable().get(code, False)


def terminal_statuses() -> FrozenSet[str]:
    """The statuses a sync run ends with."""
    return frozenset(table()["syncStatuses"]["terminal"])


def split(service: Service, name: str, args: Sequence[Any]) -> Tuple[Function, Any, Dict[str, Any]]:
    """(function, storeConfig or None, args object) of a call of ``name`` with Cordova arguments."""
    from .cordova import split_config
    fn = service.function(name)
    if fn.store_config:
        config, rest = split_config(args, fn.required)
    else:
        config, rest = None, args
    return fn, config, fn.fields(rest)
