"""Offline checks of deploy/Dockerfile and the compose files (no Docker engine needed; the
container tests in Tests/Containers run them for real).

- docker-compose.yml, alone and with docker-compose.local.yml on top, is valid for docker-compose
  (`docker-compose config`: schema and references);
- the Dockerfile parses, every COPY source exists in the repository and is not excluded by
  .dockerignore, and it builds every executable the compose files run;
- every executable the compose files run is a product in Package.swift, every service the local
  runners start (BK_SERVICES) is in the compose file, and every long-running BuzzKit service has
  a healthcheck.
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

import yaml

compose_file = root / "deploy" / "docker-compose.yml"
local_file = root / "deploy" / "docker-compose.local.yml"
# The files require BUZZKIT_SECRET_KEY (and the local one the simulator's folder) from the
# operator; any value satisfies the check.
environment = dict(os.environ, BUZZKIT_SECRET_KEY="offline-check", BUZZKIT_APNS_SIM_DIR="/offline-check")


def compose_config(*files):
    args = ["docker-compose"]
    for file in files:
        args += ["-f", str(file)]
    result = subprocess.run(args + ["config"], capture_output=True, text=True, env=environment)
    if result.returncode != 0:
        names = " + ".join(f.name for f in files)
        problems.append(f"{names} is invalid: {result.stderr.strip()}")
        return {}
    return yaml.safe_load(result.stdout)


compose = compose_config(compose_file)
local = compose_config(compose_file, local_file)

package = (root / "Package.swift").read_text()
products = set(re.findall(r'\.executable\(name: "([^"]+)"', package))
commands = set()
for name, service in list((compose.get("services") or {}).items()) + list((local.get("services") or {}).items()):
    command = service.get("command")
    if not str(service.get("image", "")).startswith("buzzkit"):
        continue  # postgres and redis come from their own images
    if isinstance(command, list) and command:
        commands.add(command[0])
    if name != "migrate" and not (service.get("healthcheck") or {}).get("test"):
        problems.append(f"compose service {name} has no healthcheck")
for command in sorted(commands):
    if command not in products:
        problems.append(f"compose runs '{command}', which is not an executable product of Package.swift")

common = (root / "deploy" / "lib" / "common.sh").read_text()
match = re.search(r"^BK_SERVICES=\(([^)]*)\)", common, re.M)
if not match:
    problems.append("deploy/lib/common.sh has no BK_SERVICES=(...) line")
for service in (match.group(1).split() if match else []):
    if service not in (compose.get("services") or {}):
        problems.append(f"./deploy/local and ./deploy/containers start {service} but docker-compose.yml has no such service")

parser = DockerfileParser(path=str(root / "deploy" / "Dockerfile"))
copied_binaries = set()
for instruction in parser.structure:
    if instruction["instruction"] == "COPY" and "--from" not in instruction["value"]:
        *sources, _ = instruction["value"].split()
        for source in sources:
            if not (root / source).exists():
                problems.append(f"Dockerfile line {instruction['startline'] + 1}: COPY source {source} does not exist")
    if instruction["instruction"] in ("RUN", "ARG"):
        copied_binaries.update(re.findall(r"[\w-]+", instruction["value"]))
# .dockerignore must not drop what the Dockerfile copies.
ignored = [line.strip() for line in (root / ".dockerignore").read_text().splitlines()
           if line.strip() and not line.startswith("#")] if (root / ".dockerignore").exists() else []
for instruction in parser.structure:
    if instruction["instruction"] == "COPY" and "--from" not in instruction["value"]:
        for source in instruction["value"].split()[:-1]:
            if source.rstrip("/") in ignored:
                problems.append(f"Dockerfile copies {source}, which .dockerignore excludes")
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
