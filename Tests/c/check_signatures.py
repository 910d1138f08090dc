#!/usr/bin/env python3
"""Every @_cdecl entry point has the parameter and return types of its prototype in the header.

The compiler checks neither: Swift exports whatever @_cdecl function it is given, and the header is
only compiled by C callers. A mismatch (an Int32 where the header says int64_t, a missing
parameter) is a silent ABI break, so both sides are parsed here and compared through the mapping
table below.

Usage: check_signatures.py HEADER SWIFT_SOURCE_DIR     (exit 1 on any mismatch, with the reasons)
"""

import re
import sys
from pathlib import Path

# Swift spelling -> the C type it is passed as. Pointers are written "T *" (nullable or not: an
# optional pointer and a plain one have the same C representation).
SWIFT_SCALARS = {
    "Int32": "int",
    "Int64": "int64_t",
    "CChar": "char",
    "Void": "void",
    "()": "void",
}
SWIFT_POINTERS = {
    "UnsafePointer": "const {} *",          # UnsafePointer<T>        <-> const T *
    "UnsafeMutablePointer": "{} *",         # UnsafeMutablePointer<T> <-> T *
}
SWIFT_RAW = {
    "UnsafeMutableRawPointer": "void *",
    "UnsafeRawPointer": "const void *",
    "OpaquePointer": "opaque *",            # an opaque struct's pointer (syncstore_store *, ...)
}
# Types imported from the header by name (struct typedefs the Swift code uses directly).
IMPORTED_STRUCTS = {"syncstore_error", "syncstore_custom_target"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_top(text, sep=","):
    """Splits on `sep` outside (), <> and []."""
    parts, depth, cur = [], 0, ""
    for i, ch in enumerate(text):
        if ch in "(<[":
            depth += 1
        elif ch in ")]" or (ch == ">" and text[i - 1:i] != "-"):
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def balanced(text, start):
    """Index just past the parenthesis group opening at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced parentheses")


# ---- the header ----

class Header:
    def __init__(self, text):
        text = strip_comments(text)
        text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)
        # Opaque handles: "typedef struct X X;" with no body.
        self.opaque = {name for _, name in re.findall(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", text)}
        self.callbacks = {}
        for m in re.finditer(r"typedef\s+([\w\s\*]+?)\(\s*\*\s*(\w+)\s*\)\s*\(([^;]*)\)\s*;", text):
            ret, name, params = m.groups()
            self.callbacks[name] = self.function_type(ret, params)
        # Drop struct bodies so their function-pointer members are not read as prototypes.
        flat = re.sub(r"typedef\s+struct\s+\w+\s*\{.*?\}\s*\w+\s*;", " ", text, flags=re.S)
        flat = re.sub(r"typedef[^;]*;", " ", flat)
        self.prototypes = {}
        for m in re.finditer(r"([\w\s\*]+?)\b(syncstore_\w+)\s*\(([^;{]*)\)\s*;", flat):
            ret, name, params = m.groups()
            self.prototypes[name] = (self.c_type(ret), self.c_params(params))

    def c_type(self, decl, named=False):
        decl = " ".join(decl.replace("*", " * ").split())
        tokens = decl.split(" ")
        if named and len(tokens) > 1 and tokens[-1] != "*" and re.fullmatch(r"\w+", tokens[-1]):
            tokens = tokens[:-1]  # the parameter's name
        stars = tokens.count("*")
        base = [t for t in tokens if t != "*"]
        const = "const" in base
        base = [t for t in base if t != "const"]
        if len(base) != 1:
            raise ValueError(f"cannot read C type '{decl}'")
        name = base[0]
        if name in self.callbacks:
            return self.callbacks[name] + " *" * stars
        if name in self.opaque and stars:
            name, const = "opaque", False
        elif name.startswith("struct"):
            raise ValueError(f"cannot read C type '{decl}'")
        return ("const " if const else "") + name + " *" * stars

    def c_params(self, params):
        params = params.strip()
        if params in ("", "void"):
            return []
        return [self.c_type(p, named=True) for p in split_top(params)]

    def function_type(self, ret, params):
        return f"{self.c_type(ret)} (*)({', '.join(self.c_params(params))})"


# ---- the Swift side ----

class Swift:
    def __init__(self, texts):
        self.aliases = {}
        self.functions = {}
        for path, text in texts:
            text = strip_comments(text)
            for m in re.finditer(r"typealias\s+(\w+)\s*=\s*", text):
                self.aliases[m.group(1)] = self.read_type_text(text, m.end())
            for m in re.finditer(r'@_cdecl\("(\w+)"\)\s*(?:public\s+)?func\s+(\w+)\s*\(', text):
                end = balanced(text, m.end() - 1)
                params = text[m.end():end - 1]
                ret = re.match(r"\s*(?:throws\s*)?(?:->\s*)?", text[end:])
                ret_type = self.read_type_text(text, end + ret.end()) if "->" in ret.group(0) else "Void"
                self.functions[m.group(1)] = (path, ret_type, [self.param_type(p) for p in split_top(params)])

    @staticmethod
    def read_type_text(text, start):
        """The type starting at text[start]: up to the end of line or an opening brace at depth 0."""
        depth, i = 0, start
        while i < len(text):
            ch = text[i]
            if ch in "(<[":
                depth += 1
            elif ch in ")]" or (ch == ">" and text[i - 1] != "-"):
                depth -= 1
            elif depth == 0 and (ch == "{" or ch == "\n"):
                break
            i += 1
        return " ".join(text[start:i].split())

    @staticmethod
    def param_type(param):
        # "_ name: Type" or "label name: Type"
        return param.split(":", 1)[1].strip()

    def c_type(self, swift):
        t = swift.strip()
        if t.endswith("?") or t.endswith("!"):
            t = t[:-1].strip()
        if t in self.aliases:
            return self.c_type(self.aliases[t])
        if t in SWIFT_SCALARS:
            return SWIFT_SCALARS[t]
        if t in SWIFT_RAW:
            return SWIFT_RAW[t]
        if t in IMPORTED_STRUCTS:
            return t
        m = re.fullmatch(r"(\w+)<(.*)>", t)
        if m and m.group(1) in SWIFT_POINTERS:
            inner = self.c_type(m.group(2))
            if inner.endswith(")"):  # a pointer to a function pointer: not in this ABI
                raise ValueError(f"no C mapping for Swift type '{swift}'")
            return SWIFT_POINTERS[m.group(1)].format(inner)
        m = re.fullmatch(r"@convention\(c\)\s*(\(.*\))\s*->\s*(.+)", t)
        if m:
            params = m.group(1)[1:-1].strip()
            args = [self.c_type(p) for p in split_top(params)] if params else []
            return f"{self.c_type(m.group(2))} (*)({', '.join(args)})"
        raise ValueError(f"no C mapping for Swift type '{swift}' (add it to the table in {Path(__file__).name})")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1])
        return 2
    header = Header(Path(argv[1]).read_text())
    sources = sorted(Path(argv[2]).glob("*.swift"))
    swift = Swift([(p.name, p.read_text()) for p in sources])
    problems = []
    for name in sorted(set(header.prototypes) - set(swift.functions)):
        problems.append(f"{name}: declared in the header, no @_cdecl function in {argv[2]}")
    for name, (path, ret, params) in sorted(swift.functions.items()):
        if name not in header.prototypes:
            problems.append(f"{name} ({path}): @_cdecl function with no prototype in the header")
            continue
        c_ret, c_params = header.prototypes[name]
        try:
            s_ret, s_params = swift.c_type(ret), [swift.c_type(p) for p in params]
        except ValueError as e:
            problems.append(f"{name} ({path}): {e}")
            continue
        if s_ret != c_ret:
            problems.append(f"{name} ({path}): returns {ret} (C: {s_ret}), the header says {c_ret}")
        if len(s_params) != len(c_params):
            problems.append(f"{name} ({path}): {len(s_params)} parameters, the header's prototype has {len(c_params)}")
            continue
        for i, (s, c, original) in enumerate(zip(s_params, c_params, params), 1):
            if s != c:
                problems.append(f"{name} ({path}): parameter {i} is {original} (C: {s}), the header says {c}")
    if problems:
        print(f"{len(problems)} @_cdecl signature(s) disagree with {argv[1]}:")
        print("\n".join("  " + p for p in problems))
        return 1
    print(f"OK: {len(swift.functions)} @_cdecl functions match their prototypes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
