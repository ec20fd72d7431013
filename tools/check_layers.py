#!/usr/bin/env python3
"""Fails when an #include in src/ points up or across the layers of docs/ARCHITECTURE.md.

Each folder under src/ may include headers of itself and of the folders listed for it below
(and nothing else of herd's). Run from anywhere: python3 tools/check_layers.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# folder -> folders it may include (besides itself). Keep in sync with docs/ARCHITECTURE.md.
ALLOWED = {
    "base": set(),
    "tensor": {"base"},
    "io": {"tensor", "base"},
    # kernels/ holds the op interfaces and bundles the backends built from its subfolders.
    "kernels": {"kernels/reference", "kernels/cpu", "kernels/cuda", "tensor", "base"},
    "kernels/reference": {"kernels", "tensor", "base"},
    "kernels/cpu": {"kernels", "kernels/reference", "tensor", "base"},
    "kernels/cuda": {"kernels", "kernels/reference", "tensor", "base"},
    "model": {"model/arch", "kernels", "io", "tensor", "base"},
    "model/arch": {"model", "kernels", "io", "tensor", "base"},
    "kv": {"kernels", "tensor", "base"},
    "tokenizer": {"io", "tensor", "base"},
    "sampling": {"base"},
    "chat": {"base"},
    "http": {"base"},  # transport only: knows nothing of models or the engine
    "api": {"base"},  # protocol-neutral request/response types and the Status -> HTTP mapping
    "protocols/openai": {"api", "base"},
    "protocols/anthropic": {"api", "base"},
    "protocols/ollama": {"api", "base"},
    "engine": {"model", "model/arch", "kv", "sampling", "tokenizer", "kernels", "io", "tensor", "base"},
    "server": {"protocols/openai", "protocols/anthropic", "protocols/ollama", "api", "http", "chat", "engine",
               "model", "model/arch", "kv", "sampling", "tokenizer", "kernels", "io", "tensor", "base"},
    "cli": None,  # the top: may use everything
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(rel: str) -> str:
    """Longest ALLOWED key that is a prefix folder of rel ('kernels/cpu/x.cc' -> 'kernels/cpu')."""
    parts = rel.split("/")[:-1]
    while parts:
        key = "/".join(parts)
        if key in ALLOWED:
            return key
        parts.pop()
    return ""


def main() -> int:
    errors = []
    for path in sorted(SRC.rglob("*")):
        if path.suffix not in {".h", ".cc", ".cu", ".cuh"}:
            continue
        rel = path.relative_to(SRC).as_posix()
        here = folder_of(rel)
        if not here:
            errors.append(f"src/{rel}: folder is not listed in tools/check_layers.py")
            continue
        allowed = ALLOWED[here]
        is_test = path.stem.endswith("_test") or path.stem.startswith("test_")
        for m in INCLUDE.finditer(path.read_text(errors="replace")):
            inc = m.group(1)
            target = folder_of(inc)
            if not target or allowed is None or target == here:
                continue
            if target in allowed:
                continue
            # Tests may use the reference kernels of their own layer as an oracle.
            if is_test and here.startswith("kernels") and target.startswith("kernels"):
                continue
            errors.append(f"src/{rel}: includes \"{inc}\" ({target}), but {here} may only use: "
                          f"{', '.join(sorted(allowed)) or 'nothing of herd'}")
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} include(s) point the wrong way")
        return 1
    print("check_layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
