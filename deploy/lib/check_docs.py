#!/usr/bin/env python3
"""Checks the documentation offline (run by ./deploy/test before it builds).

1. Every relative link and image in the repository's Markdown files (README.md, docs/, the READMEs
   next to the code) names a file or folder that exists, and a `#fragment` names a heading of the
   file it points into (GitHub's anchors). Links to other hosts are not followed.
2. Every BUZZKIT_* environment variable the code, scripts and tests name is documented in docs/
   (docs/configuration.md is the list; a feature's own page may carry its variables).

Prints one line per problem (file:line: what) and exits 1 if there is any.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE = re.compile(r"^[ ]{0,3}\[[^\]]+\]:[ \t]*(<[^>]*>|\S+)", re.MULTILINE)
HTML = re.compile(r"""<(?:img|a|source)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def tracked(pattern):
    # Tracked files and new ones not yet committed (ignored ones, .build/ and .buzzkit/, left out).
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", pattern],
        cwd=ROOT, check=True, capture_output=True)
    return [ROOT / name for name in out.stdout.decode().split("\0") if name]


def prose(path):
    """The file's text with fenced code blocks and inline code spans blanked (line breaks kept, so
    offsets still give line numbers): links inside code are examples, not links."""
    lines = []
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            lines.append("")
        else:
            lines.append("" if inside else line)
    text = "\n".join(lines)
    # A code span may wrap onto the next line, never across a paragraph.
    span = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.DOTALL)
    return span.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if FENCE.match(line):
                inside = not inside
                continue
            match = None if inside else HEADING.match(line)
            if match:
                base = slug(match.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f"{base}-{n}")
        cache[path] = found
    return cache[path]


def check_links(files):
    problems = []
    for path in files:
        text = prose(path)
        found = [(m.start(1), m.group(1)) for m in INLINE.finditer(text)]
        found += [(m.start(1), m.group(1)) for m in REFERENCE.finditer(text)]
        found += [(m.start(1), m.group(1)) for m in HTML.finditer(text)]
        for offset, target in sorted(found):
            target = target.strip("<>")
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
                continue  # another host (http:, https:, mailto:)
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, offset) + 1}"
            file_part, _, fragment = target.partition("#")
            file_part = file_part.split("?")[0]
            resolved = path if not file_part else (path.parent / file_part).resolve()
            if not str(resolved).startswith(str(ROOT)):
                problems.append(f"{where}: {target} points outside the repository")
            elif file_part and not resolved.exists():
                problems.append(f"{where}: {target} does not exist")
            elif fragment and resolved.suffix == ".md" and fragment.lower() not in anchors(resolved):
                problems.append(f"{where}: {target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    return problems


def check_variables(markdown):
    docs = "\n".join(p.read_text(encoding="utf-8") for p in markdown if p.relative_to(ROOT).parts[0] == "docs")
    code = subprocess.run(
        ["git", "grep", "--untracked", "-n", "-o", "-E", r"BUZZKIT_[A-Z0-9_]*[A-Z0-9]", "--", ".", ":!*.md"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    first = {}
    for hit in code.splitlines():
        file, line, name = hit.split(":", 2)
        first.setdefault(name, f"{file}:{line}")
    problems = []
    for name, where in sorted(first.items()):
        if name == "BUZZKIT_LOCAL":  # the prefix of BUZZKIT_LOCAL_<NAME>_PORT, built in deploy/local
            continue
        if not re.search(rf"\b{name}\b", docs):
            problems.append(f"{where}: {name} is not documented in docs/ (add it to docs/configuration.md)")
    return problems


def main():
    markdown = tracked("*.md")
    problems = check_links(markdown) + check_variables(markdown)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} documentation problem(s)")
        return 1
    print(f"documentation: {len(markdown)} Markdown files, every relative link resolves, every BUZZKIT_* variable documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
