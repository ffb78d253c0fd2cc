#!/usr/bin/env python3
"""template.yaml as CloudFormation gets it: SAM's own translator (samtranslator, in the SAM CLI
venv that infra/check-template.sh installs), then, with parameter values, the stack those
values create.

    .venv-sam/bin/python infra/sam-translate.py [--template FILE] [--resolve] [Name=Value ...]
    .venv-sam/bin/python infra/sam-translate.py --local-env DIR --local FILE
        [--local-extra FILE ...] [Name=Value ...]

Prints the translated template as JSON. With --resolve (implied by any Name=Value), the
parameters take their defaults except the values given, and the output is what CloudFormation
would create: each condition evaluated, resources and outputs under a false condition dropped,
every Fn::If replaced by its branch and AWS::NoValue removed. It also evaluates the template's
Rules with those values: the descriptions of the assertions that fail (CloudFormation would
refuse the stack before creating anything) are under the extra top-level key "FailedRules".

With --local-env DIR (and --local FILE), writes the environment SAM's translation gives each
function of that stack to DIR/<role>.env, for the local Lambda runs (infra/lambda-local.sh):
the template's variables, resolved, with only what points at AWS swapped for its local stand-in
(see `local_environments`), and nothing else.

The Rust template and IAM tests read this (shared/hosts/lambda/tests/common/mod.rs), so what
they check is what SAM hands CloudFormation, managed policies and generated resources included.
"""

import json
import os
import re
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


# What points at AWS in a function's environment, by the logical id it names, and what stands in
# for it locally (the keys of --local FILE's "resources"): the table and queues moto serves, and
# the front door's URL (the API's stage URL or the Function URL: the local router's).
LOCAL_RESOURCES = {
    "TasksTable": "table",
    "WorkQueue": "work_queue_url",
    "PushQueue": "push_queue_url",
    "WorkDeadLetterQueue": "work_dlq_url",
    "PushDeadLetterQueue": "push_dlq_url",
    "A2aApi": "front_door_url",
    "FrontFunctionUrl": "front_door_url",
    "RelayFunctionUrl": "relay_url",
}
# A secret the template names stands for variables locally: moto serves no secret the functions
# could read, so each is replaced by the variables of its local form (--local FILE's "secrets",
# by logical id: the push signing key file, the A2A-Lite channels' A2A_LITE_* variables).
SECRET_VARIABLES = {
    "A2A_PUSH_SIGNING_SECRET_ARN": "PushSigningKeysSecret",
    "A2A_API_KEY_SECRET_ARN": "ApiKeysSecret",
    "A2A_LITE_SECRET_ARN": "LiteChannelSecret",
}


# The pseudo parameters as the local cloud has them (infra/lambda-local.sh: moto in us-east-1).
LOCAL_PSEUDO = {"AWS::Region": os.environ.get("AWS_REGION", "us-east-1"), "AWS::Partition": "aws",
                "AWS::URLSuffix": "amazonaws.com", "AWS::AccountId": "123456789012"}


def local_value(name, v, values, stand_ins):
    """The local value of `v`, a resolved variable of the template: a string, a parameter's
    value, or what the stack creates (a Ref, GetAtt or Sub naming a resource), swapped for its
    stand-in."""
    if isinstance(v, (str, int, float, bool)):
        return scalar(v)
    if isinstance(v, dict) and list(v) == ["Ref"] and v["Ref"] in values.params:
        return values.params[v["Ref"]]
    if isinstance(v, dict) and list(v) == ["Fn::Sub"] and isinstance(v["Fn::Sub"], str):
        # A URL of an AWS service in the stack's region (X-Ray's OTLP endpoint): the local
        # cloud's region and account.
        refs = re.findall(r"\$\{([^}]+)\}", v["Fn::Sub"])
        if refs and all(r in LOCAL_PSEUDO for r in refs):
            return re.sub(r"\$\{([^}]+)\}", lambda m: LOCAL_PSEUDO[m.group(1)], v["Fn::Sub"])
    text = json.dumps(v)
    named = [logical for logical in LOCAL_RESOURCES if f'"{logical}' in text or "${" + logical in text]
    if len(named) != 1:
        raise SystemExit(f"sam-translate: no local value for {name}: {text}")
    key = LOCAL_RESOURCES[named[0]]
    if key not in stand_ins:
        raise SystemExit(f"sam-translate: --local gives no {key!r} for {name}: {text}")
    return stand_ins[key]


def http_roles():
    """The functions that serve HTTP requests (shared/hosts/lambda/routes.json)."""
    routes = json.load(open(os.path.join(os.path.dirname(__file__), "..", "shared", "hosts",
                                         "lambda", "routes.json")))
    return set(routes["functions"]) | {routes["frontFunction"]["name"], routes["relayFunction"]["name"]}


def relay_role():
    """The relay function's role (shared/hosts/lambda/routes.json)."""
    routes = json.load(open(os.path.join(os.path.dirname(__file__), "..", "shared", "hosts",
                                         "lambda", "routes.json")))
    return routes["relayFunction"]["name"]


def local_environments(stack, values, local):
    """{role: {name: value}}: each function's environment in `stack` (resolved) with the
    endpoints swapped (`LOCAL_RESOURCES`), each secret replaced by its local variables
    (`SECRET_VARIABLES`), then `local`'s "overrides": the only variables that differ from the
    template, each named there with its reason."""
    envs = {}
    for logical, r in stack["Resources"].items():
        if r["Type"] != "AWS::Lambda::Function":
            continue
        variables = r["Properties"].get("Environment", {}).get("Variables", {})
        env = {}
        for name, v in variables.items():
            if name in SECRET_VARIABLES and not isinstance(v, str) and SECRET_VARIABLES[name] in json.dumps(v):
                secret = SECRET_VARIABLES[name]
                if secret not in local.get("secrets", {}):
                    raise SystemExit(f"sam-translate: --local gives no stand-in for the secret {secret} ({name})")
                env.update(local["secrets"][secret])
                continue
            env[name] = local_value(name, v, values, local.get("resources", {}))
        role = env["A2A_FUNCTION"]
        for override in local.get("overrides", []):
            # Each override says why, and whether it adds the variable to every function, only
            # replaces the template's value where the template sets one, or stands in for what
            # an HTTP function reads from each request where the template sets nothing.
            to = override["to"]
            if (to == "every function" or override["name"] in variables
                    or (to == "every HTTP function without one" and role in http_roles())
                    or (to == "the relay function" and role == relay_role())):
                env[override["name"]] = override["value"]
        # Lambda gives each invocation a deadline (its start plus the function's Timeout);
        # cargo lambda watch gives every one 600,000 ms after the epoch. The function's own
        # Timeout stands in (a2a_lambda_glue::LOCAL_TIMEOUT_VARIABLE).
        timeout = r["Properties"].get("Timeout", 3)
        if not isinstance(timeout, int):
            raise SystemExit(f"sam-translate: {logical}'s Timeout is not a number: {timeout!r}")
        env["A2A_LOCAL_INVOCATION_TIMEOUT_SECS"] = str(timeout)
        envs[role] = env
    return envs


def read_extra(path, parameters, overrides, local):
    """A local run's settings beyond the defaults (infra/lambda-local.sh restart-watch FILE),
    one `NAME=value` a line: a template parameter's name sets that parameter (what the stack
    would be deployed with); `A2A_LITE_*` (but the principal, a parameter) are the A2A-Lite
    channels' local form, standing in for the channel secret; any other variable is a local
    override given to every function, and the file's comment says why."""
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition("=")
        if name in parameters:
            overrides[name] = value
        elif name.startswith("A2A_LITE_"):
            local.setdefault("secrets", {}).setdefault("LiteChannelSecret", {})[name] = value
        else:
            local.setdefault("overrides", []).append(
                {"name": name, "value": value, "to": "every function", "why": f"from {path}"})


def write_local_environments(directory, envs):
    os.makedirs(directory, exist_ok=True)
    for old in os.listdir(directory):
        if old.endswith(".env"):
            os.remove(os.path.join(directory, old))
    for role, env in envs.items():
        with open(os.path.join(directory, f"{role}.env"), "w") as f:
            f.write(f"# The {role} function's environment as template.yaml deploys it, endpoints local\n"
                    "# (infra/sam-translate.py --local-env; infra/lambda-local.sh writes it).\n")
            for name in sorted(env):
                value = env[name]
                # cargo lambda's env file reader takes a single-quoted value as it stands, but
                # for a `\n` (a line break): any value but one holding a quote or that.
                if "'" in value or "\\n" in value or "\n" in value:
                    raise SystemExit(f"sam-translate: {role}'s {name} cannot be written to an env file: {value!r}")
                f.write(f"{name}='{value}'\n")


def main(args):
    path = "template.yaml"
    resolve_it = False
    overrides = {}
    local_env = None
    local = {}
    extra = []
    while args:
        a = args.pop(0)
        if a == "--template":
            path = args.pop(0)
        elif a == "--resolve":
            resolve_it = True
        elif a == "--local-env":
            local_env = args.pop(0)
            resolve_it = True
        elif a == "--local":
            local = json.load(open(args.pop(0)))
        elif a == "--local-extra":
            extra.append(args.pop(0))
        elif "=" in a:
            name, value = a.split("=", 1)
            overrides[name] = value
            resolve_it = True
        else:
            raise SystemExit(__doc__)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    out = translate(path)
    for file in extra:
        read_extra(file, out.get("Parameters", {}), overrides, local)
    if resolve_it:
        values = Values(out, overrides)
        out = created(out, values)
    if local_env is not None:
        if out["FailedRules"]:
            raise SystemExit(f"sam-translate: CloudFormation would refuse these parameters: {out['FailedRules']}")
        envs = local_environments(out, values, local)
        write_local_environments(local_env, envs)
        print(" ".join(sorted(envs)))
        return
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
