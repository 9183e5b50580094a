"""The fast read path for front-matter: PyYAML's C ``CSafeLoader`` with memcli's YAML rules.

Indexing reads every memory file once; with ruamel's loader that is 260-300 µs a file
(it also builds a new loader class per document), with libyaml through PyYAML's
``CSafeLoader`` 80-90 µs. PyYAML resolves plain scalars by YAML 1.1 rules (``no`` ->
False, ``017`` -> 15, ``1:20`` -> 80), so this module swaps its resolvers for the YAML
1.2 core-schema ones that ruamel uses (copied from ``ruamel.yaml.resolver``'s
``implicit_resolvers`` for version 1.2, MIT licence) and constructs ints and floats as
ruamel's ``SafeConstructor`` does for 1.2.

The contract is one-sided: :func:`load` either returns exactly what ruamel's safe
loader returns for the same text, or raises :class:`Refused`. Anything it is not sure
of (a duplicate key, a merge key ``<<``, a ``%YAML`` directive, ``!!omap``/``!!pairs``/
``!!set``, a timestamp with more than 6 fraction digits, any parse error) is refused,
and the caller (``fileformat._load_yaml``) reads the text again with ruamel, which
gives the error message and line number. Round-trip rewriting never comes here.
Tests: tests/test_yamlfast.py compares both loaders on a Hypothesis corpus.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NoReturn

import yaml

if TYPE_CHECKING:
    from collections.abc import Generator, Hashable
    from datetime import date

__all__ = ["Refused", "load"]


class Refused(Exception):
    """This loader does not vouch for the text: read it with ruamel instead."""


# YAML 1.2 implicit resolvers, as in ruamel.yaml.resolver.implicit_resolvers for (1, 2):
# (tag, pattern, first characters).
_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:float", r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""", "-+0123456789."),
    ("tag:yaml.org,2002:int", r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""", "-+0123456789"),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
    ("tag:yaml.org,2002:null", r"^(?: ~ |null|Null|NULL | )$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:timestamp", r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""", "0123456789"),
    ("tag:yaml.org,2002:value", r"^(?:=)$", "="),
]
_FRACTION = re.compile(r"\.([0-9]*)")
#: PyYAML built without libyaml has no ``CSafeLoader``: every text is then refused (read by ruamel).
_BASE = getattr(yaml, "CSafeLoader", None)
if TYPE_CHECKING:  # mypy needs a static base; CSafeLoader has SafeLoader's interface
    _LoaderBase = yaml.SafeLoader
else:
    _LoaderBase = _BASE or yaml.SafeLoader


class _Loader(_LoaderBase):
    """``CSafeLoader`` with YAML 1.2 resolvers and ruamel's 1.2 constructors."""

    yaml_implicit_resolvers: dict = {}

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Hashable, Any]:
        """A plain dict; a duplicate key or a merge key is refused."""
        if not isinstance(node, yaml.MappingNode):
            raise Refused("not a mapping")
        mapping: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise Refused("merge key")
            key = self.construct_object(key_node, deep=deep)
            try:
                if key in mapping:
                    raise Refused("duplicate key")
            except TypeError:
                raise Refused("unhashable key") from None
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_map(self, node: yaml.MappingNode) -> Generator[dict[Any, Any], None, None]:
        """As PyYAML's, through :meth:`construct_mapping` (kept for recursive structures)."""
        data: dict = {}
        yield data
        data.update(self.construct_mapping(node))

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """ruamel's SafeConstructor.construct_yaml_int for YAML 1.2 (``017`` is 17, ``0o17`` is 15)."""
        value = self.construct_scalar(node).replace("_", "")
        sign = -1 if value[:1] == "-" else 1
        if value[:1] in ("+", "-"):
            value = value[1:]
        if not value:
            raise Refused("empty number")
        if value == "0":
            return 0
        for prefix, base in (("0b", 2), ("0x", 16), ("0o", 8)):
            if value.startswith(prefix):
                return sign * int(value[2:], base)
        return sign * int(value)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        """ruamel's SafeConstructor.construct_yaml_float for YAML 1.2."""
        value = self.construct_scalar(node).replace("_", "").lower()
        sign = -1 if value[:1] == "-" else 1
        if value[:1] in ("+", "-"):
            value = value[1:]
        if value == ".inf":
            return sign * float("inf")
        if value == ".nan":
            return float("nan")
        return sign * float(value)

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> date:
        """PyYAML's, but ruamel rounds a fraction past microseconds where PyYAML cuts it: refused."""
        match = _FRACTION.search(node.value)
        if match and len(match.group(1)) > 6:
            raise Refused("timestamp fraction past microseconds")
        return super().construct_yaml_timestamp(node)

    def refuse(self, node: yaml.Node) -> NoReturn:
        """Types the two libraries build differently (``!!omap``, ``!!pairs``, ``!!set``)."""
        raise Refused(f"tag {node.tag}")


for _tag, _pattern, _first in _RESOLVERS:
    _Loader.add_implicit_resolver(_tag, re.compile(_pattern, re.X), list(_first))
_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
for _tag in ("omap", "pairs", "set"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _Loader.refuse)


def load(source: str) -> Any:
    """Parse one YAML document (front-matter text, ``\\n`` line endings) as ruamel's safe
    loader would with YAML 1.2 and duplicate keys refused.

    Args:
        source: the YAML text between the fences.

    Raises:
        Refused: the text does not parse here, or holds something this loader does not
            vouch for; read it with ruamel for the real answer (or the error and its line).
    """
    if _BASE is None or "%YAML" in source or "\t" in source:  # a version directive switches ruamel to 1.1 rules
        raise Refused("directive or tab")
    loader = _Loader(source)
    try:
        return loader.get_single_data()
    except Refused:
        raise
    except Exception as err:  # noqa: BLE001 - any refusal is explained by ruamel's reading
        raise Refused(f"{type(err).__name__}: {err}") from None
    finally:
        loader.dispose()
