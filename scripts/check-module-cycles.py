#!/usr/bin/env python3
"""Fails when a crate of the workspace has a NEW import cycle between its top-level modules.

For every crate under crates/, each top-level module (`src/foo.rs` or `src/foo/**`, `src/bin/*`
excluded) is a node. An edge foo -> bar is a path in foo's code (not in comments, strings or
`#[cfg(test)]` modules) that names a module of bar: `crate::bar::…`, `crate::{bar::…}`,
`super::…` climbing out to `bar`, or `crate::Name` where the crate root re-exports `Name` from
`bar` (`pub use bar::Name`). Modules that reach each other, directly or through others, form a
cycle (a strongly connected component).

Known cycles are listed in scripts/module-cycles.allow, one per line (`crate: a b c`, modules
sorted). The check fails on a cycle that is not listed (a new one, or a listed one that grew)
and on a listed cycle that no longer exists (delete its line: the list only shrinks).

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
        for m in re.finditer(r"#\[cfg\(test\)\]\s*((?:#\[[^\]]*\]\s*)*)mod\s+(" + IDENT + r")\s*;", text):
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


def heads(group: str) -> list:
    """First segments of the items of a `{a::x, b, c::{d}}` group."""
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
    return [re.match(r"\s*(" + IDENT + ")", it).group(1) for it in items if re.match(r"\s*" + IDENT, it)]


def brace_group(code: str, start: int) -> str:
    depth, j = 0, start
    while j < len(code):
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        j += 1
        if depth == 0:
            break
    return code[start + 1:j - 1]


def crate_graph(src: Path):
    roots = [p for p in (src / "lib.rs", src / "main.rs") if p.exists()]
    tops = {p.stem for p in src.glob("*.rs") if p.stem not in ("lib", "main")}
    tops |= {p.name for p in src.iterdir() if p.is_dir() and p.name != "bin" and (p / "mod.rs").exists()}
    reexports = {}
    for r in roots:
        code = strip_code(r.read_text(encoding="utf-8"))
        for m in re.finditer(r"pub\s+use\s+(" + IDENT + r")::", code):
            if m.group(1) not in tops:
                continue
            rest = code[m.end():]
            if rest.startswith("{"):
                names = heads(brace_group(rest, 0))
            else:
                names = [re.match(r"(?:" + IDENT + r"::)*(" + IDENT + ")", rest).group(1)]
            for name in names:
                reexports.setdefault(name, m.group(1))
    skip = test_only_files(src)
    declared = path_modules(src)
    edges = {t: set() for t in tops}
    for f in sorted(src.rglob("*.rs")):
        if f in roots or f.resolve() in skip or "bin" in f.relative_to(src).parts[:1]:
            continue
        path = module_path(src, f, declared)
        if not path:
            continue
        me = path[0]
        if me not in tops:
            continue
        code = strip_code(f.read_text(encoding="utf-8"))
        targets = []
        for m in re.finditer(r"(?<![A-Za-z0-9_:])crate::", code):
            rest = code[m.end():]
            if rest.startswith("{"):
                targets += heads(brace_group(rest, 0))
            else:
                hm = re.match(IDENT, rest)
                if hm:
                    targets.append(hm.group(0))
        # super::super::x from a nested module: climb, then the next segment names the module.
        for m in re.finditer(r"(?<![A-Za-z0-9_:])((?:super::)+)", code):
            ups = m.group(1).count("super::")
            base = path[: max(len(path) - ups, 0)]
            if base:
                continue  # still inside `me`
            rest = code[m.end():]
            if rest.startswith("{"):
                targets += heads(brace_group(rest, 0))
            else:
                hm = re.match(IDENT, rest)
                if hm:
                    targets.append(hm.group(0))
        for t in targets:
            t = t if t in tops else reexports.get(t)
            if t and t != me:
                edges[me].add(t)
    return edges


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
    """The parser on a made-up crate: real edges found, comments/strings/tests ignored."""
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
            "net/mod.rs": "mod conn;\n",
            "net/conn.rs": "use super::super::Thing; use super::Other;\n",
        }
        for name, text in files.items():
            (src / name).write_text(text)
        edges = crate_graph(src)
        assert edges == {"a": {"b", "c"}, "b": {"a"}, "c": set(), "net": {"c"}}, edges
        assert cycles(edges) == [("a", "b")], cycles(edges)


def main() -> int:
    self_test()
    found = set()
    for manifest in sorted((ROOT / "crates").glob("*/Cargo.toml")):
        crate = manifest.parent.name
        for comp in cycles(crate_graph(manifest.parent / "src")):
            found.add(f"{crate}: {' '.join(comp)}")
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
    print(f"module cycles: none new ({len(found)} known, listed in scripts/module-cycles.allow)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
