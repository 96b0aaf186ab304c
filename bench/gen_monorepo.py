#!/usr/bin/env python3
"""Writes a monorepo of N agents for the `astrolift validate` benchmark.

Each agent `agents/agent-NNNNN/` has an `astrolift.toml` (valid per seed 000),
a brief with one context file, and two local skills, one referenced in each
local form. An `astrolift.agents.toml` federation file includes them by glob
and lists every one with an alias.

Usage: gen_monorepo.py N OUT_DIR   (OUT_DIR is emptied first)
"""

import shutil
import sys
from pathlib import Path

MANIFEST = """\
astrolift_version = 1
name = "{name}"
brief = "brief/README.md"
skills = [
  {{ triage = "skills/triage" }},
  "./skills/report",
  "pr-review@1.2.0",
]

[[workloads]]
name = "{name}"
kind = "agent"
run_family = "task"
max_retries = 3
tool_timeout_seconds = 1200
result_ttl_hours = 168

  [[workloads.containers]]
  name = "agent"
  is_primary = true
  image_ref = "ghcr.io/calliopeai/astrolift-agent-claude-code-vnc:latest"

[environment]
LOG_LEVEL = "info"
TEAM = "team-{team}"

[secrets]
ANTHROPIC_API_KEY = "secret://agents/anthropic"

[package]
root = "."
include = ["astrolift.toml", "brief/**", "skills/**"]
exclude = ["**/*.tmp"]
"""

BRIEF = """\
# {name}

Triage incoming reports for team {team} and write a summary.
Follow the [severity guide](severity.md) when ranking findings.
"""

CONTEXT = """\
# Severity

- critical: data loss or outage
- high: a broken feature without a workaround
- low: everything else
"""

SKILL = """\
---
name: {skill}
description: {description}
license: Apache-2.0
metadata:
  owner: team-{team}
---

# {skill}

{description} Keep the output short and cite the source of every claim.
"""

SKILLS = {
    "triage": "Sorts incoming reports by severity and routes them to an owner.",
    "report": "Writes a daily summary of triaged reports as Markdown.",
}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def agent_name(i: int) -> str:
    return f"agent-{i:05d}"


def write_agent(root: Path, i: int) -> None:
    name = agent_name(i)
    team = i % 17
    agent = root / "agents" / name
    write(agent / "astrolift.toml", MANIFEST.format(name=name, team=team))
    write(agent / "brief" / "README.md", BRIEF.format(name=name, team=team))
    write(agent / "brief" / "severity.md", CONTEXT)
    for skill, description in SKILLS.items():
        text = SKILL.format(skill=skill, description=description, team=team)
        write(agent / "skills" / skill / "SKILL.md", text)


def federation(n: int) -> str:
    lines = [
        'schema = "astrolift.agent.federation/v1"',
        'name = "bench-agents"',
        'include = ["agents/*/astrolift.toml"]',
        'exclude = ["agents/experimental-*/astrolift.toml"]',
        "auto_register_new = false",
        "",
    ]
    for i in range(n):
        name = agent_name(i)
        lines += ["[[agents]]", f'manifest = "agents/{name}/astrolift.toml"', f'alias = "{name}"', ""]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) != 3 or not sys.argv[1].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    n, root = int(sys.argv[1]), Path(sys.argv[2])
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write(root / "astrolift.agents.toml", federation(n))
    for i in range(n):
        write_agent(root, i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
