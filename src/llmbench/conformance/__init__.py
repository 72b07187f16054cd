"""The referee (`llmbench conformance`): a scripted OpenAI-compatible server whose every answer
is known (server.py), the scenarios and their truth computed from the script alone
(scenarios.py), each load tester's own words for the same workload (tools.py), and the table
that puts them side by side (runner.py). docs/conformance.md is its output."""
