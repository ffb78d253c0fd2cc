#!/usr/bin/env python3
"""template.yaml as CloudFormation gets it: SAM's own translator (samtranslator, in the SAM CLI
venv that infra/check-template.sh installs), then, with parameter values, the stack those
values create.

    .venv-sam/bin/python infra/sam-translate.py [--template FILE] [--resolve] [Name=Value ...]

Prints the translated template as JSON. With --resolve (implied by any Name=Value), the
parameters take their defaults except the values given, and the output is what CloudFormation
would create: each condition evaluated, resources and outputs under a false condition dropped,
every Fn::If replaced by its branch and AWS::NoValue removed. It also evaluates the template's
Rules with those values: the descriptions of the assertions that fail (CloudFormation would
refuse the stack before creating anything) are under the extra top-level key "FailedRules".

The Rust template and IAM tests read this (shared/hosts/lambda/tests/common/mod.rs), so what
they check is what SAM hands CloudFormation, managed policies and generated resources included.
"""

import json
import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """SAM looks managed policy names up in the account; the template names ARNs only."""

    def load(self):
        return {}


def translate(path):
    template = yaml_parse(open(path).read())
    # sam build's job: the code's location does not change what the stack creates.
    template.setdefault("Globals", {}).setdefault("Function", {})["CodeUri"] = "s3://bucket/key"
    return transform(template, {}, NoManagedPolicies())


class Values:
    """Parameter values (as strings, as CloudFormation compares them) and conditions."""

    def __init__(self, template, overrides):
        self.params = {}
        for name, p in template.get("Parameters", {}).items():
            default = p.get("Default")
            self.params[name] = "" if default is None else scalar(default)
        for name, value in overrides.items():
            if name not in self.params:
                raise SystemExit(f"sam-translate: no parameter {name}")
            self.params[name] = value
        self.params.setdefault("AWS::Region", "us-east-1")
        self.params.setdefault("AWS::Partition", "aws")
        self.conditions = template.get("Conditions", {})
        self.known = {}

    def condition(self, name):
        if name not in self.known:
            self.known[name] = self.truth(self.conditions[name])
        return self.known[name]

    def value(self, v):
        if isinstance(v, dict) and list(v) == ["Ref"] and v["Ref"] in self.params:
            return self.params[v["Ref"]]
        if isinstance(v, dict) and list(v) == ["Fn::If"]:
            c, a, b = v["Fn::If"]
            return self.value(a if self.condition(c) else b)
        if isinstance(v, (str, int, float, bool)):
            return scalar(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        raise SystemExit(f"sam-translate: cannot evaluate {v!r}")

    def truth(self, e):
        (fn, arg), = e.items()
        if fn == "Condition":
            return self.condition(arg)
        if fn == "Fn::Equals":
            return self.value(arg[0]) == self.value(arg[1])
        if fn == "Fn::Not":
            return not self.truth(arg[0])
        if fn == "Fn::And":
            return all(self.truth(x) for x in arg)
        if fn == "Fn::Or":
            return any(self.truth(x) for x in arg)
        if fn == "Fn::Contains":
            return self.value(arg[1]) in self.value(arg[0])
        raise SystemExit(f"sam-translate: cannot evaluate {fn}")


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


NO_VALUE = {"Ref": "AWS::NoValue"}


def resolve(v, values):
    """`v` with each Fn::If replaced by its branch and AWS::NoValue removed."""
    if isinstance(v, dict):
        if list(v) == ["Fn::If"]:
            c, a, b = v["Fn::If"]
            return resolve(a if values.condition(c) else b, values)
        out = {}
        for k, x in v.items():
            x = resolve(x, values)
            if x != NO_VALUE:
                out[k] = x
        return out
    if isinstance(v, list):
        return [x for x in (resolve(x, values) for x in v) if x != NO_VALUE]
    return v


def created(template, values):
    out = dict(template)
    for section in ("Resources", "Outputs"):
        kept = {}
        for name, r in template.get(section, {}).items():
            if "Condition" in r and not values.condition(r["Condition"]):
                continue
            kept[name] = resolve(r, values)
        out[section] = kept
    failed = []
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not values.truth(rule["RuleCondition"]):
            continue
        for a in rule["Assertions"]:
            if not values.truth(a["Assert"]):
                failed.append(a.get("AssertDescription", name))
    out["FailedRules"] = failed
    return out


def main(args):
    path = "template.yaml"
    resolve_it = False
    overrides = {}
    while args:
        a = args.pop(0)
        if a == "--template":
            path = args.pop(0)
        elif a == "--resolve":
            resolve_it = True
        elif "=" in a:
            name, value = a.split("=", 1)
            overrides[name] = value
            resolve_it = True
        else:
            raise SystemExit(__doc__)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    out = translate(path)
    if resolve_it:
        out = created(out, Values(out, overrides))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
