"""Offline checks of deploy/Dockerfile and deploy/docker-compose.yml (no Docker engine runs here).

- the compose file is valid for docker-compose (`docker-compose config -q`, schema and references);
- the Dockerfile parses, every COPY source exists in the repository, and it copies every
  executable the compose file runs;
- every executable the compose file runs is a product in Package.swift, and every service the
  local runner starts is in the compose file.
Exits non-zero with one line per problem.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

from dockerfile_parse import DockerfileParser

root = Path(__file__).resolve().parents[2]
problems = []

compose_file = root / "deploy" / "docker-compose.yml"
# The compose file requires BUZZKIT_SECRET_KEY from the operator; any value satisfies the check.
environment = dict(os.environ, BUZZKIT_SECRET_KEY="offline-check")
result = subprocess.run(["docker-compose", "-f", str(compose_file), "config"], capture_output=True, text=True,
                        env=environment)
if result.returncode != 0:
    problems.append(f"docker-compose.yml is invalid: {result.stderr.strip()}")
    compose = {}
else:
    import yaml
    compose = yaml.safe_load(result.stdout)

package = (root / "Package.swift").read_text()
products = set(re.findall(r'\.executable\(name: "([^"]+)"', package))
commands = set()
for name, service in (compose.get("services") or {}).items():
    command = service.get("command")
    if not str(service.get("image", "")).startswith("buzzkit"):
        continue  # postgres and redis come from their own images
    if isinstance(command, list) and command:
        commands.add(command[0])
for command in sorted(commands):
    if command not in products:
        problems.append(f"compose runs '{command}', which is not an executable product of Package.swift")

local = (root / "deploy" / "local").read_text()
match = re.search(r"^SERVICES=\(([^)]*)\)", local, re.M)
for service in (match.group(1).split() if match else []):
    if service not in (compose.get("services") or {}):
        problems.append(f"./deploy/local starts {service} but docker-compose.yml has no such service")

parser = DockerfileParser(path=str(root / "deploy" / "Dockerfile"))
copied_binaries = set()
for instruction in parser.structure:
    if instruction["instruction"] == "COPY" and "--from" not in instruction["value"]:
        *sources, _ = instruction["value"].split()
        for source in sources:
            if not (root / source).exists():
                problems.append(f"Dockerfile line {instruction['startline'] + 1}: COPY source {source} does not exist")
    if instruction["instruction"] == "RUN":
        copied_binaries.update(re.findall(r"[\w-]+", instruction["value"]))
# SwiftPM needs every target's folder to exist, so the build stage must copy all of them.
copied_paths = set()
for instruction in parser.structure:
    if instruction["instruction"] == "COPY" and "--from" not in instruction["value"]:
        *sources, _ = instruction["value"].split()
        copied_paths.update(source.rstrip("/") for source in sources)
for target_path in sorted(set(re.findall(r'path: "([^"]+)"', package))):
    top = target_path.split("/")[0]
    if top not in copied_paths and target_path not in copied_paths:
        problems.append(f"the Dockerfile does not copy {top}/, which Package.swift's target path {target_path} needs")
for command in sorted(commands):
    if command not in copied_binaries:
        problems.append(f"the Dockerfile does not copy the executable '{command}' into the image")

# Targets with resources (the migrations' SQL, the gateway's dashboard files) are read at run time
# from <Package>_<Target>.resources next to the executable: the image must ship those bundles.
if re.search(r"resources: \[", package):
    runs = " ".join(i["value"] for i in parser.structure if i["instruction"] == "RUN")
    if ".resources" not in runs:
        problems.append("the Dockerfile does not copy the *.resources bundles (migrations, dashboard) next to the executables")

for problem in problems:
    print(f"container files: {problem}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"container files: ok ({len(compose.get('services', {}))} compose services, {len(commands)} executables)")
