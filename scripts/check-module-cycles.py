#!/usr/bin/env python3
"""Fails when a crate of the workspace has a NEW import cycle between its modules, at two depths:
between the top-level modules of the crate, and between the submodules of each top-level module
(`transport::error` and `transport::h1` inside `transport`).

For every crate under crates/, each module (`src/foo.rs`, `src/foo/mod.rs`, `src/foo/bar.rs`, …,
`src/bin/*` excluded) belongs to a node: at depth 1 its top-level module (`foo`), at depth 2 its
submodule under that top-level module (`foo::bar`). An edge foo -> bar is a path in foo's code (not in
comments, strings or `#[cfg(test)]` modules) that names a module of bar: `crate::bar::…`,
`crate::{bar::…}`, `super::…` reaching `bar` (a sibling's `super::bar` at depth 2), or a name that a
module binds with `use` and that comes from `bar` (`crate::Name` where the crate root has
`pub use bar::Name`, `super::Name` where the parent has `pub use bar::Name`). Modules that reach
each other, directly or through others, form a cycle (a strongly connected component).

Known cycles are listed in scripts/module-cycles.allow, one per line (`crate: a b c` at depth 1,
`crate: top::a top::b` at depth 2, modules sorted). The check fails on a cycle that is not listed
(a new one, or a listed one that grew) and on a listed cycle that no longer exists (delete its
line: the list only shrinks).

Usage: scripts/check-module-cycles.py [--print]  (--print lists the cycles found, allowed or not)
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOW = ROOT / "scripts" / "module-cycles.allow"
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_code(text: str) -> str:
    """Code without comments, string/char literals and `#[cfg(test)]` modules."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and not re.match(r"[A-Za-z0-9_]", text[i - 1:i] or " "):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'":
            m = re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|[^\\'\n])'", text[i:])
            if m:
                out.append("' '")
                i += m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    code = "".join(out)
    # Drop `#[cfg(test)] mod name { ... }` blocks (braces are balanced once strings are gone).
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{", code)
        if not m:
            return code
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[:m.start()] + code[j:]


def test_only_files(src: Path) -> set:
    """Files declared as `#[cfg(test)] mod name;` (test code in a file of its own)."""
    out = set()
    for f in src.rglob("*.rs"):
        text = f.read_text(encoding="utf-8")
        for m in re.finditer(r"#\[cfg\(test\)\]\s*((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text):
            path = re.search(r'#\[path\s*=\s*"([^"]+)"\]', m.group(1))
            base = f.parent if f.name in ("mod.rs", "lib.rs", "main.rs") else f.parent / f.stem
            if path:
                out.add((f.parent / path.group(1)).resolve())
            else:
                out.add((base / f"{m.group(2)}.rs").resolve())
                out.add((base / m.group(2) / "mod.rs").resolve())
    return out


def path_modules(src: Path) -> dict:
    """Files of `#[path = "..."] mod name;` declarations, with the module path they really have
    (`stream_native.rs` declared in `stream.rs` is `stream::native`)."""
    out = {}
    for f in src.rglob("*.rs"):
        text = f.read_text(encoding="utf-8")
        for m in re.finditer(r'#\[path\s*=\s*"([^"]+)"\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(' + IDENT + r")\s*;", text):
            out[(f.parent / m.group(1)).resolve()] = (f, m.group(2))
    return out


def module_path(src: Path, f: Path, declared=None) -> list:
    if declared and f.resolve() in declared:
        parent, name = declared[f.resolve()]
        return module_path(src, parent, declared) + [name]
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts.pop()
    return parts


def split_top(group: str) -> list:
    """The items of a `a::x, b, c::{d}` group, split at its top-level commas."""
    items, depth, cur = [], 0, ""
    for ch in group:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    return items


def brace_group(code: str, start: int) -> str:
    depth, j = 0, start
    while j < len(code):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        j += 1
        if depth == 0:
            break
    return code[start + 1:j - 1]


def expand(rest: str) -> list:
    """The paths named by the text after `crate::` (or another prefix): `a::b::C`,
    `a::{b::C, d}`, `{a, b::c::{D, E}}`; each path a list of segments (`self` and `*` dropped)."""
    segs = []
    while True:
        rest = rest.lstrip()
        if rest.startswith("{"):
            out = []
            for item in split_top(brace_group(rest, 0)):
                for sub in expand(item):
                    out.append(segs + sub)
            return out or [segs]
        m = re.match(r"(" + IDENT + r")\s*(::)?", rest)
        if not m or m.group(1) in ("self", "as"):
            return [segs]
        segs.append(m.group(1))
        if not m.group(2):
            return [segs]
        rest = rest[m.end():]


def references(code: str, path: list) -> list:
    """Absolute paths (lists of segments from the crate root) named through `crate::` or
    `super::` in code of the module at `path`."""
    out = []
    for m in re.finditer(r"(?<![A-Za-z0-9_:])crate::", code):
        out += expand(code[m.end():])
    for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:super::)+)", code):
        base = path[: max(len(path) - m.group(1).count("super::"), 0)]
        out += [base + p for p in expand(code[m.end():])]
    return out


class Crate:
    """The module tree of one crate: module paths, files, and the names each module binds with
    `use` (visible to its children through `super::`, and crate-wide at the root)."""

    def __init__(self, src: Path):
        self.src = src
        roots = {p.resolve() for p in (src / "lib.rs", src / "main.rs") if p.exists()}
        skip = test_only_files(src)
        declared = path_modules(src)
        self.files = []  # (module path, stripped code)
        for f in sorted(src.rglob("*.rs")):
            if f.resolve() in skip or "bin" in f.relative_to(src).parts[:1]:
                continue
            if f.resolve() in roots:
                path = []
            else:
                path = module_path(src, f, declared)
                if not path:
                    continue
            self.files.append((path, strip_code(f.read_text(encoding="utf-8"))))
        self.modules = {tuple(p) for p, _ in self.files}
        self.uses = {}  # module path -> {name: absolute path of the module it comes from}
        for path, code in self.files:
            binds = self.uses.setdefault(tuple(path), {})
            for m in re.finditer(r"(?<![A-Za-z0-9_])use\s+", code):
                for p in expand(code[m.end():]):
                    if len(p) < 2:
                        continue
                    origin = self.anchor(path, p[:-1])
                    if origin is not None:
                        binds.setdefault(p[-1], origin)

    def anchor(self, path: list, segs: list):
        """`segs` of a `use` in module `path` as an absolute path, or None for another crate."""
        segs = list(segs)
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] == "self":
            return path + segs[1:]
        if segs[0] == "super":
            ups = 0
            while ups < len(segs) and segs[ups] == "super":
                ups += 1
            return path[: max(len(path) - ups, 0)] + segs[ups:]
        if tuple(path + segs[:1]) in self.modules:
            return path + segs
        return None

    def resolve(self, segs: list, depth: int = 0) -> list:
        """The deepest module of the crate that an absolute path names, following `use`
        bindings (`crate::Name` where the root has `pub use a::b::Name` is in `a::b`)."""
        cur = []
        for i, seg in enumerate(segs):
            if tuple(cur + [seg]) in self.modules:
                cur.append(seg)
                continue
            origin = self.uses.get(tuple(cur), {}).get(seg)
            if origin is not None and depth < 8 and origin + [seg] != cur + [seg]:
                return self.resolve(origin + [seg] + segs[i + 1:], depth + 1)
            break
        return cur

    def graph(self, prefix: list) -> dict:
        """Edges between the direct submodules of module `prefix` (the crate root for [])."""
        n = len(prefix)
        nodes = {p[n] for p in self.modules if len(p) > n and list(p[:n]) == prefix}
        edges = {t: set() for t in nodes}
        for path, code in self.files:
            if len(path) <= n or path[:n] != prefix:
                continue
            me = path[n]
            for ref in references(code, path):
                t = self.resolve(ref)
                if len(t) > n and t[:n] == prefix and t[n] != me:
                    edges[me].add(t[n])
        return edges


def crate_graph(src: Path, prefix=None) -> dict:
    return Crate(src).graph(prefix or [])


def crate_cycles(src: Path) -> list:
    """Cycles between the top-level modules, then between the submodules of each top-level
    module (`transport::error transport::h1`)."""
    crate = Crate(src)
    out = [" ".join(c) for c in cycles(crate.graph([]))]
    for top in sorted({p[0] for p in crate.modules if len(p) > 1}):
        for c in cycles(crate.graph([top])):
            out.append(" ".join(f"{top}::{m}" for m in c))
    return out


def cycles(edges: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def self_test() -> None:
    """The parser on a made-up crate: real edges found at both depths, comments/strings/tests
    ignored."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "src"
        (src / "net").mkdir(parents=True)
        files = {
            "lib.rs": "mod a; mod b; mod c; mod net; pub use c::Thing;\n",
            "a.rs": "use crate::{b::X, c};\n// use crate::net;\nconst S: &str = \"crate::net\";\n"
                    "#[cfg(test)]\nmod tests { use crate::net::Y; fn f() { let _ = '{'; } }\n",
            "b.rs": "pub fn f() { super::a::g(); }\n",
            "c.rs": "pub struct Thing;\n",
            # depth 2: conn -> pool through the parent's re-export, pool -> conn by path; wire is
            # reached only from a test module, and pool's test file is not code of pool.
            "net/mod.rs": "mod conn; mod pool; mod wire; pub(crate) use pool::Pool;\n",
            "net/conn.rs": "use super::super::Thing; use super::{Other, Pool};\n"
                           "#[cfg(test)]\nmod tests { use super::super::wire::W; }\n",
            "net/pool.rs": "pub struct Pool(crate::net::conn::Conn);\n#[cfg(test)]\npub(crate) mod tests;\n",
            "net/pool/tests.rs": "use crate::net::wire::W;\n",
            "net/wire.rs": "pub struct W;\n",
        }
        for name, text in files.items():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_text(text)
        edges = crate_graph(src)
        assert edges == {"a": {"b", "c"}, "b": {"a"}, "c": set(), "net": {"c"}}, edges
        assert cycles(edges) == [("a", "b")], cycles(edges)
        inner = crate_graph(src, ["net"])
        assert inner == {"conn": {"pool"}, "pool": {"conn"}, "wire": set()}, inner
        assert crate_cycles(src) == ["a b", "net::conn net::pool"], crate_cycles(src)


def main() -> int:
    self_test()
    found = set()
    for manifest in sorted((ROOT / "crates").glob("*/Cargo.toml")):
        crate = manifest.parent.name
        for comp in crate_cycles(manifest.parent / "src"):
            found.add(f"{crate}: {comp}")
    allowed = set()
    if ALLOW.exists():
        for line in ALLOW.read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                crate, _, mods = line.partition(":")
                allowed.add(f"{crate.strip()}: {' '.join(sorted(mods.split()))}")
    if "--print" in sys.argv:
        for c in sorted(found):
            print(c + ("" if c in allowed else "   <- not in the allow-list"))
    new, gone = sorted(found - allowed), sorted(allowed - found)
    for c in new:
        print(f"module cycle not in scripts/module-cycles.allow: {c}", file=sys.stderr)
    for c in gone:
        print(f"allowed module cycle no longer exists, delete its line from scripts/module-cycles.allow: {c}",
              file=sys.stderr)
    if new or gone:
        return 1
    print(f"module cycles (top-level modules and their submodules): none new ({len(found)} known, "
          "listed in scripts/module-cycles.allow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
