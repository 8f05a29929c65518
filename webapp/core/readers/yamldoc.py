"""A YAML document read with the safe loader, its aliases measured before anything is built.

YAML's anchors and aliases let a few bytes stand for much more: `&a` names a value, each `*a`
repeats it. The document's nodes are composed first (an alias is the same node again, so this
costs no more than the text); the size the document would have with every alias written out
is summed over the nodes, once each, a node's size remembered; only when it fits the limit
are the values built. A size counts the characters of every scalar (keys too) and one for
each collection; a document with no alias measures at most its own length.
"""

from __future__ import annotations

from typing import Any

from webapp.core.readers.codings import OverLimit
from webapp.core.records import ReaderError
from webapp.core.words import count


def load_yaml(text: str, limit: int) -> Any:
    """The document's value (plain data only: no tag builds an object); ReaderError when it
    does not read, OverLimit when its aliases written out pass `limit` characters."""
    import yaml  # only for a cassette: the other readers start without it

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _measure(node, limit, yaml.ScalarNode, yaml.MappingNode)
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise ReaderError(f"not a cassette: the YAML does not read{line}: {problem}") from None
    except (ValueError, TypeError, RecursionError) as error:
        if isinstance(error, ReaderError):
            raise
        raise ReaderError(f"not a cassette: the YAML does not read ({error})") from None
    finally:
        loader.dispose()


def _measure(root: Any, limit: int, scalar: Any, mapping: Any) -> None:
    """Refuse a document that, its aliases written out, passes `limit` (or holds itself)."""
    sizes: dict[int, int] = {}
    opened: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node: Any
        node, closing = stack.pop()
        key = id(node)
        if closing:
            total = 1 + sum(sizes[id(child)] for child in _children(node, mapping))
            sizes[key] = min(total, limit + 1)  # past the limit is past it: no huge numbers
            opened.discard(key)
            continue
        if key in sizes:
            continue
        if key in opened:  # an alias inside the value it names: written out, it never ends
            raise OverLimit(
                "the YAML holds an alias inside the value it names: written out, it "
                "would never end",
                limit,
            )
        if isinstance(node, scalar):
            sizes[key] = len(node.value)
            continue
        opened.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node, mapping))
    if sizes[id(root)] > limit:
        raise OverLimit(
            f"the YAML, with its aliases written out, passes the size limit of "
            f"{count(limit, 'byte')} (each use of an alias counts what it names again)",
            limit,
        )


def _children(node: Any, mapping: Any) -> list[Any]:
    if isinstance(node, mapping):
        return [part for pair in node.value for part in pair]
    return list(node.value)
