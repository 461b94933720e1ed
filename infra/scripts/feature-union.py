#!/usr/bin/env python3
"""Check that `sam build` of each function reuses the workspace's compiled dependencies.

`sam build` builds each Lambda function from its package folder (template.yaml's CodeUri),
and cargo then resolves features for that package alone. A dependency built with other
features than in the workspace's test build is compiled again, and so is everything above
it. `shared/feature-union` names the workspace's features so the two agree; this script
compares cargo's unit graphs (what each command would compile) and names every dependency
the functions' builds would compile beyond the workspace's test build, with the features
that differ.

Usage: infra/scripts/feature-union.py   (exit 1 when a function's build adds dependencies)
Cargo prints unit graphs only as an unstable option: RUSTC_BOOTSTRAP=1 is set for that
query alone (nothing is compiled).
"""
import functools
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKSPACE_BUILD = ["cargo", "test", "--workspace", "--all-targets", "--no-run"]
# The functions as template.yaml builds them: from their package folders.
FUNCTIONS = ["functions/router", "functions/adapter"]


def units(command, folder):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    env.setdefault("CARGO_BUILD_TARGET", host_triple())
    out = subprocess.run(command + ["--unit-graph", "-Z", "unstable-options"],
                         cwd=os.path.join(ROOT, folder), env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"feature-union: {' '.join(command)} in {folder} failed:\n{out.stderr[-3000:]}")
    graph = json.loads(out.stdout)["units"]

    @functools.lru_cache(maxsize=None)
    def key(i):
        unit = graph[i]
        deps = tuple(sorted(key(d["index"]) for d in unit["dependencies"]))
        return (unit["pkg_id"], unit["target"]["name"], unit["mode"], tuple(unit["features"]),
                unit["profile"]["opt_level"], unit.get("platform"), hash(deps))

    return {key(i) for i in range(len(graph))}


def host_triple():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def name(pkg_id):
    # "registry+https://...#serde_json@1.0.1" or "path+file:///...#0.1.0"
    tail = pkg_id.rsplit("#", 1)[-1]
    return tail if "@" in tail else pkg_id.rsplit("/", 1)[-1]


def main():
    workspace = units(WORKSPACE_BUILD, ".")
    by_target = {}
    for k in workspace:
        by_target.setdefault((k[0], k[1], k[2], k[5]), set()).add(k[3])
    failed = False
    for folder in FUNCTIONS:
        extra = units(["cargo", "build"], folder) - workspace
        # The function's own crates may differ (their features are what the function asks
        # for, e.g. the router without DuckDB); dependencies from registries must not.
        foreign = [k for k in extra if not k[0].startswith("path+")]
        print(f"feature-union: {folder}: {len(extra)} units beyond the workspace's build, "
              f"{len(foreign)} of them dependencies")
        for k in sorted(foreign):
            if k[3] not in by_target.get((k[0], k[1], k[2], k[5]), set()):
                print(f"  {name(k[0])} ({k[1]}, {'host' if k[5] is None else 'target'}) "
                      f"features {list(k[3])}; the workspace's: "
                      f"{[list(f) for f in by_target.get((k[0], k[1], k[2], k[5]), [])]}")
        failed |= bool(foreign)
    if failed:
        print("feature-union: add the workspace's features above to shared/feature-union/Cargo.toml",
              file=sys.stderr)
        sys.exit(1)


main()
