#!/usr/bin/env python3
"""Turns a pgbench endpoint script into a session for `postgres --single`.

    single-user-session.py SCRIPT TRANSACTIONS [SEED]

Each statement of the script is prepared once, with every `:variable` as a parameter
(as `pgbench -M prepared` does), and the transaction is executed TRANSACTIONS times as
the app role, with the script's `\\set` variables drawn as pgbench would draw them.
Benchmarks/rls-instructions.sh counts the instructions such a session takes.
"""
import random
import re
import sys

VARIABLE = re.compile(r"(?<!:):([a-z_]+)")


def python_expression(expression):
    """A pgbench `\\set` expression as Python: random(), case-when chains, integer arithmetic."""
    expression = re.sub(r"random\(", "random.randint(", expression)
    expression = VARIABLE.sub(r"v['\1']", expression).replace("/", "//")
    match = re.fullmatch(r"\s*case (.*) end\s*", expression)
    if not match:
        return expression
    body = match.group(1)
    branches = re.findall(r"when (.*?) then (.*?)(?= when | else |$)", body)
    otherwise = re.search(r" else (.*)$", body).group(1)
    result = otherwise
    for condition, value in reversed(branches):
        result = f"({value}) if ({condition}) else ({result})"
    return result


def main():
    script_path, transactions = sys.argv[1], int(sys.argv[2])
    random.seed(int(sys.argv[3]) if len(sys.argv) > 3 else 7)
    settings, body = [], []
    for line in open(script_path, encoding="utf-8"):
        stripped = line.strip()
        if stripped.startswith("\\set "):
            name, expression = stripped[5:].split(" ", 1)
            settings.append((name, python_expression(expression)))
        elif stripped.startswith("\\") or stripped.startswith("--") or not stripped:
            continue
        else:
            body.append(line.rstrip("\n"))
    statements = [" ".join(s.split()) for s in "\n".join(body).split(";\n") if s.strip()]
    statements[-1] = statements[-1].rstrip(";")

    print("set role diary_app;")
    prepared = []  # (BEGIN, COMMIT or a prepared statement's name, its variables in parameter order)
    for index, statement in enumerate(statements):
        if statement.upper() in ("BEGIN", "COMMIT"):
            prepared.append((statement, []))
            continue
        names = []

        def parameter(match):
            names.append(match.group(1))
            return f"${len(names)}"

        text = VARIABLE.sub(parameter, statement)
        print(f"prepare s{index} as {text};")
        prepared.append((f"s{index}", names))

    for _ in range(transactions):
        v = {"client_id": 0}
        for name, expression in settings:
            v[name] = eval(expression, {"random": random, "v": v})
        for name, names in prepared:
            if not names and name in ("BEGIN", "COMMIT"):
                print(f"{name};")
            else:
                arguments = ", ".join(f"'{v[n]}'" for n in names)
                print(f"execute {name}({arguments});" if names else f"execute {name};")


if __name__ == "__main__":
    main()
