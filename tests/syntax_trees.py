"""Syntax trees of Python sources, parsed once a process whichever test asks first: the architecture and
package-shape tests each walk the trees of the package's ~140 modules (~0.5 s of parsing for each that parses them
itself). A tree is read, never changed."""

from __future__ import annotations

import ast
import functools


@functools.cache
def syntax_tree(source: str) -> ast.Module:
    return ast.parse(source)
