"""Package.swift declares exactly what each target imports (run by ./deploy/test).

For every target with Swift sources (libraries, executables, tests; the C system libraries have
none), the package's own modules imported by its files (`import X`, `internal import X`,
`@testable import X`, ... also inside `#if canImport(...)` / `#if os(...)` blocks: a module
imported on one platform is used) must equal the package modules in its `dependencies`:

- a module imported but not declared arrives only transitively (through another dependency),
  which works by accident and breaks when that dependency changes: declare it;
- a module declared but imported by no file is a dependency nothing uses: remove it.

Modules from outside the package (Foundation, Testing, Glibc, UIKit, ...) are not checked.
A dependency on an executable target (built for its binary, never imported) is allowed unused.
The package is read with `swift package dump-package` (SWIFT_SCRATCH_PATH is honoured), the
sources from each target's path minus its `exclude` and minus folders of other targets nested
in it. Exits 1 with one line per offending target/module pair and how to fix it.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]

IMPORT = re.compile(
    r"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*"              # @testable, @_exported, @preconcurrency, @_implementationOnly
    r"(?:(?:public|package|internal|fileprivate|private)\s+)?"
    r"import\s+(?:(?:typealias|struct|class|enum|protocol|let|var|func)\s+)?"
    r"([A-Za-z_][A-Za-z0-9_]*)")


def dump_package():
    command = ["swift", "package"]
    scratch = os.environ.get("SWIFT_SCRATCH_PATH")
    if scratch:
        command += ["--scratch-path", scratch]
    command.append("dump-package")
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("check_imports: `swift package dump-package` failed:\n" + result.stderr)
    return json.loads(result.stdout)


def dependency_names(target):
    """The names a target's `dependencies` list, whatever form each takes."""
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.append(dependency[kind][0])
    return names


def target_path(target):
    if target.get("path"):
        return root / target["path"]
    folder = {"test": "Tests", "plugin": "Plugins"}.get(target["type"], "Sources")
    return root / folder / target["name"]


def swift_files(target, other_paths):
    base = target_path(target)
    excluded = [base / entry for entry in target.get("exclude", [])]
    files = []
    for path in sorted(base.rglob("*.swift")):
        if any(path == e or e in path.parents for e in excluded):
            continue
        if any(p != base and (p == path or p in path.parents) and base in p.parents for p in other_paths):
            continue  # a target of its own nested in this one's folder
        files.append(path)
    return files


def imported_modules(path):
    modules = set()
    in_block_comment = False
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if in_block_comment:
            if "*/" in stripped:
                in_block_comment = False
            continue
        if stripped.startswith("/*") and "*/" not in stripped:
            in_block_comment = True
            continue
        match = IMPORT.match(line)
        if match:
            modules.add(match.group(1))
    return modules


def main():
    package = dump_package()
    targets = package["targets"]
    by_name = {t["name"]: t for t in targets}
    # A dependency may name a product; in this package each product's module is its target's.
    product_targets = {p["name"]: p.get("targets", []) for p in package.get("products", [])}
    package_modules = set(by_name)
    executables = {t["name"] for t in targets if t["type"] == "executable"}
    other_paths = [target_path(t) for t in targets]

    problems = []
    for target in targets:
        files = swift_files(target, other_paths)
        if not files:
            continue  # system libraries, C targets
        name = target["name"]
        declared = set()
        for dependency in dependency_names(target):
            if dependency in by_name:
                declared.add(dependency)
            else:
                declared.update(product_targets.get(dependency, [dependency]))
        used = {}
        for path in files:
            for module in imported_modules(path) & package_modules:
                if module != name:
                    used.setdefault(module, path.relative_to(root))
        for module in sorted(set(used) - declared):
            problems.append(
                f'{name} imports {module} (e.g. in {used[module]}) but does not declare it: '
                f'add "{module}" to the dependencies of target "{name}" in Package.swift')
        for module in sorted(declared - set(used) - executables):
            if module not in package_modules:
                continue
            problems.append(
                f'{name} declares {module} but none of its files imports it: '
                f'remove "{module}" from the dependencies of target "{name}" in Package.swift '
                f'(or import it in the file that uses it)')

    if problems:
        print("Package.swift and the imports disagree (each target must declare exactly the package "
              "modules its files import, nothing arriving only transitively, nothing unused):", file=sys.stderr)
        for problem in problems:
            print("  " + problem, file=sys.stderr)
        sys.exit(1)
    print(f"check_imports: {sum(1 for t in targets if swift_files(t, other_paths))} targets declare exactly what they import")


main()
