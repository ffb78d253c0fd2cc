#!/usr/bin/env bash
# Offline checks of template.yaml: `sam validate` (catches bad SAM event types) and cfn-lint
# (bad properties, bad !GetAtt targets). Neither checks InvokeMode/ResponseTransferMode or that
# the template mirrors the code: `cargo test -p a2a-lambda-glue --test template` does that.
#
# Installs aws-sam-cli (pinned) into its own venv, .venv-sam (it pins an older boto3 than moto).
# First run ~80 s (install), then ~10 s. `--setup` only installs (infra/new-agent-check.sh
# checks a generated project's template with the same venv).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-sam
SAM_VERSION=1.170.0
if [[ ! -x "$VENV/bin/sam" ]] || ! "$VENV/bin/sam" --version 2>/dev/null | grep -q "$SAM_VERSION"; then
  echo "check-template: installing aws-sam-cli==$SAM_VERSION into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "aws-sam-cli==$SAM_VERSION"
fi
if [[ "${1:-}" == "--setup" ]]; then exit 0; fi

export AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0
echo "check-template: sam validate" >&2
"$VENV/bin/sam" validate --template-file template.yaml
echo "check-template: cfn-lint" >&2
"$VENV/bin/cfn-lint" template.yaml
echo "check-template: SAM translation (streaming integrations)" >&2
# What API Gateway will really get: translate with SAM's own translator and check that every
# route of shared/hosts/lambda/routes.json is there, going to its function, streaming exactly when it should.
"$VENV/bin/python" - <<'PY'
import json
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:
    def load(self):
        return {}

template = yaml_parse(open("template.yaml").read())
template["Globals"]["Function"]["CodeUri"] = "s3://bucket/key"  # sam build's job, not ours
out = transform(template, {}, NoManagedPolicies())
paths = out["Resources"]["A2aApi"]["Properties"]["Body"]["paths"]
routes = json.load(open("shared/hosts/lambda/routes.json"))
# The API exists only with FrontDoor ApiGateway: SAM wraps what it adds in that condition.
def unless(v):
    while isinstance(v, dict) and list(v) == ["Fn::If"]:
        v = v["Fn::If"][1]
    return v
paths = {p: unless(ops) for p, ops in paths.items()}
paths = {p: {m: unless(op) for m, op in ops.items()} for p, ops in paths.items()}
logical = lambda f: "".join(p.capitalize() for p in f.split("-")) + "Function"
seen = 0
for r in routes["routes"]:
    integ = paths[r["path"]][r["method"].lower()]["x-amazon-apigateway-integration"]
    uri = json.dumps(integ["uri"])
    assert "${%s.Arn}" % logical(r["function"]) in uri, (r, uri)
    streaming = routes["functions"][r["function"]]["streaming"]
    assert (integ.get("responseTransferMode") == "STREAM") == streaming, (r, integ)
    assert ("response-streaming-invocations" in uri) == streaming, (r, uri)
    seen += 1
declared = sum(len(ops) for ops in paths.values())
assert declared == seen, f"the API has {declared} operations, routes.json {seen}"
print(f"check-template: {seen} routes, streaming where routes.json says")
# FrontDoor FunctionUrl: the front function's URL streams; the relay function's buffers.
url = out["Resources"]["FrontFunctionUrl"]
assert url["Condition"] == "ViaFunctionUrl" and url["Properties"]["InvokeMode"] == "RESPONSE_STREAM", url
url = out["Resources"]["RelayFunctionUrl"]
assert url["Condition"] == "ViaFunctionUrl" and url["Properties"]["InvokeMode"] == "BUFFERED", url
# One stage, the throttled one: without OpenApiVersion SAM also deploys a stage named "Stage".
stages = [r["Properties"].get("StageName") for r in out["Resources"].values()
          if r["Type"] == "AWS::ApiGateway::Stage"]
assert len(stages) == 1 and stages[0] != "Stage", stages
PY
echo "check-template: sam deploy --guided, as SAM CLI asks it (auth questions)" >&2
# SAM CLI's own guided deploy, answered with Enter (each default) up to its first AWS call
# (the managed S3 bucket, stopped here; y to an auth question): it must get there, asking at most one
# "has no authentication. Is this okay? [y/N]" (whose default, No, aborts the deploy): none
# behind API Gateway, two behind the Function URL (the front function's and the relay
# function's). Every question it asks besides the
# parameters' is in README.md's "Deploy", in order.
"$VENV/bin/python" - <<'PY'
import copy, json, re
from unittest import mock
from click.testing import CliRunner
import samcli.commands.deploy.guided_context as guided
from samcli.cli.main import cli
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class ReachedAws(Exception):
    pass

def reached_aws(*args, **kwargs):
    raise ReachedAws()

def run(overrides):
    asked = []
    def confirm(text, default=False, **kwargs):
        asked.append(re.sub(r"\x1b\[[0-9;]*m|\t", "", text))
        # y, as README.md says; counted below.
        return True if "has no authentication" in text else default
    def prompt(text, default=None, **kwargs):
        asked.append(re.sub(r"\x1b\[[0-9;]*m|\t", "", text))
        return default
    args = ["deploy", "--guided", "--template-file", "template.yaml"]
    if overrides:
        args += ["--parameter-overrides", overrides]
    with mock.patch.object(guided, "manage_stack", reached_aws), \
         mock.patch.object(guided, "confirm", confirm), mock.patch.object(guided, "prompt", prompt):
        result = CliRunner().invoke(cli, args)
    assert isinstance(result.exception, ReachedAws) or "ReachedAws" in result.output, \
        f"guided deploy stopped before its first AWS call ({overrides or 'defaults'}):\n{result.output[-2000:]}"
    return asked

readme = open("README.md").read()
for overrides, allowed in [("", 0), ("FrontDoor=FunctionUrl", 2)]:
    asked = run(overrides)
    auth = [q for q in asked if "has no authentication" in q]
    assert len(auth) == allowed, (overrides, auth)
    questions = [q for q in asked if not q.startswith("Parameter ")]
    parameters = len(asked) - len(questions)
    position = readme.index("## Deploy")
    for q in questions:
        found = readme.find(q, position)
        assert found >= 0, f"README.md does not show the guided question {q!r} (in order)"
        position = found
    assert f"({parameters} in all" in readme, f"README.md's Deploy does not say ({parameters} in all"
    assert all(f"`{name}`" in readme for name in ("FrontDoor", "AuthMode", "ExistingTableStreamStart")), "README.md's parameters"
    print(f"check-template: guided deploy ({overrides or 'defaults'}): {parameters} parameters, "
          f"then {questions}; {len(auth)} about auth")

# The Auth section that tells SAM CLI the API is authenticated elsewhere changes nothing SAM
# generates but the deployment's id (a hash of the API's properties).
template = yaml_parse(open("template.yaml").read())
template["Globals"]["Function"]["CodeUri"] = "s3://bucket/key"
class NoManagedPolicies:
    def load(self):
        return {}
without = copy.deepcopy(template)
assert without["Resources"]["A2aApi"]["Properties"].pop("Auth") == {"ApiKeyRequired": False}
a, b = (transform(t, {}, NoManagedPolicies())["Resources"] for t in (template, without))
strip = lambda r: {k: v for k, v in r.items() if not k.startswith("A2aApiDeployment") and k != "A2aApiStage"}
assert strip(a) == strip(b), "the API's Auth section changes what SAM generates"
PY
echo "check-template: parameter patterns accept what AWS names and refuse the rest" >&2
# CloudFormation refuses a parameter value its AllowedPattern does not match, before anything is
# created: a wrong ARN is caught there rather than half-way through the stack.
"$VENV/bin/python" - <<'PY'
import re
from samtranslator.yaml_helper import yaml_parse
params = yaml_parse(open("template.yaml").read())["Parameters"]
cases = {
    "ExistingTableStreamArn": (
        ["", "arn:aws:dynamodb:us-east-1:123456789012:table/a2a-restored/stream/2026-11-26T10:00:00.000"],
        ["a2a-restored", "arn:aws:dynamodb:us-east-1:123456789012:table/a2a-restored"]),
    # A secret's full ARN, with the 6 characters Secrets Manager adds to its name: IAM matches
    # a policy's secret ARN against that, so a partial one (the name alone) would deploy and
    # then every read of the secret would be denied.
    "PushSigningKeySecretArn": (
        ["", "arn:aws:secretsmanager:us-east-1:123456789012:secret:a2a/push-keys-AbCdEf"],
        ["a2a/push-keys", "arn:aws:kms:us-east-1:123456789012:key/1234abcd",
         "arn:aws:secretsmanager:us-east-1:123456789012:secret:a2a/push-keys",
         "arn:aws:secretsmanager:us-east-1:123456789012:secret:a2a/push-keys-AbCdE"]),
    "ApiKeySecretArn": (
        ["", "arn:aws-us-gov:secretsmanager:us-gov-west-1:123456789012:secret:keys-AbCdEf"],
        ["keys", "arn:aws:secretsmanager:us-east-1:1234:secret:keys",
         "arn:aws:secretsmanager:us-east-1:123456789012:secret:api-keys",
         "arn:aws:secretsmanager:us-east-1:123456789012:secret:keys-AbCdEf*"]),
    "LiteChannelSecretArn": (
        ["", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:chat/channels-x1Y2z3"],
        ["chat/channels", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:chat/channels"]),
    "AgentCredentialsSecretArn": (
        ["", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:agents-Q9w8E7"],
        ["agents", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:agents",
         "arn:aws:secretsmanager:eu-west-1:123456789012:secret:-Q9w8E7"]),
    # Rates EventBridge takes, from a minute to SQS's longest delay (15 minutes).
    "SweepSchedule": (
        ["rate(1 minute)", "rate(2 minutes)", "rate(15 minutes)"],
        ["", "rate(1 minutes)", "rate(0 minutes)", "rate(16 minutes)", "rate(1 hour)",
         "rate(5 minute)", "cron(0/5 * * * ? *)", "rate(1 minute) "]),
    "SecretsKmsKeyArn": (
        ["", "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"],
        ["alias/aws/secretsmanager", "arn:aws:kms:eu-west-1:123456789012:alias/mine"]),
    "AlarmTopicArn": (["", "arn:aws:sns:us-east-1:123456789012:alerts"], ["alerts"]),
    "MetricsNamespace": (["a2a-lambda", "Team/A2A"], ["", "two words"]),
    "StageName": (["a2a", "prod_v2"], ["", "a/b"]),
    "ApiKeyName": (["X-API-Key", "api_key"], ["", "X API Key"]),
    "ExistingTableName": (["", "a2a-restored"], ["a b", "ab"]),
    # What a character may be bounds its bytes in the 4 KB environment (template.rs).
    "PublicBaseUrl": (["", "https://agent.example.com/a2a", "https://a.example/x%20y"],
                      ["http://agent.example", "https://agent.example/", "https://\u00e9.example", "https://a.example/?x"]),
    "AgentName": (["", "Agent \u00dcn\u00efc\u00f8d\u00e9 \U0001F600"], ["a\x01b", "a\nb"]),
    "AgentDescription": (["", "Answers \"questions\" in \u65e5\u672c\u8a9e"], ["a\tb"]),
    "JwtIssuer": (["", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Abc"], ["a b", "https://\u00e9", 'a"b']),
    "JwtAudience": (["", "a2a, other"], ["a\\b", "\u00e9"]),
    "CorsAllowedOrigins": (["", "https://a.example, *"], ["https://\u00e9.example"]),
    "LitePrincipal": (["key:a2a-lite", "jwt:22:https://issuer.examplesub"], ["key: a", "\u00e9"]),
    # Plain http only to the function's own host (a collector extension); no quote or backslash.
    "SpanExport": (["", "xray", "https://collector.example:4318/v1/traces", "http://localhost:4318/v1/traces",
                    "http://127.0.0.1:4318/v1/traces"],
                   ["XRay", "http://collector.example/v1/traces", "https://a b", 'https://a"b', "https://\u00e9.example"]),
}
for name, (good, bad) in cases.items():
    pattern = params[name]["AllowedPattern"]
    longest = params[name].get("MaxLength")
    for v in good:
        assert re.fullmatch(pattern, v), (name, v, pattern)
        assert longest is None or len(v) <= longest, (name, v)
    for v in bad:
        assert not re.fullmatch(pattern, v), (name, v, pattern)
print(f"check-template: {len(cases)} parameter patterns")
PY
# Other settings of parameters that change what the stack creates, each checked on a copy of
# the template with that parameter's default changed.
variants=$(mktemp -d)
trap 'rm -rf "$variants"' EXIT
check_variant() { # parameter default new-default why
  local file="$variants/$1.yaml"
  "$VENV/bin/python" - "$file" "$1" "$2" "$3" <<'PY'
import sys
out, name, default, value = sys.argv[1:]
text = open("template.yaml").read()
old = f"  {name}:\n    Type: String\n    Default: {default}\n"
assert old in text, f"{name}'s default"
open(out, "w").write(text.replace(old, old.replace(f"Default: {default}", f"Default: {value}"), 1))
PY
  echo "check-template: sam validate + cfn-lint with $1 $3 ($4)" >&2
  "$VENV/bin/sam" validate --template-file "$file"
  "$VENV/bin/cfn-lint" "$file"
}
# A restored table: the stack creates no table and every reference goes through CreateTable.
check_variant ExistingTableName '""' a2a-restored "an existing table"
# Provisioned capacity: the table, its index and their auto scaling.
check_variant TableCapacity OnDemand Provisioned "auto-scaled capacity"
# The A2A-Lite channels: the channel function, its secret and its routes.
check_variant LiteChannels '"off"' '"on"' "the A2A-Lite channel function and secret"
# The stage's access logs and their log group.
check_variant ApiAccessLogs '"off"' '"on"' "access logs"
# Spans to X-Ray: the endpoint and its signing in every function, the roles' xray:PutSpans.
check_variant SpanExport '""' xray "spans to X-Ray's OTLP endpoint"
echo "check-template: ok" >&2
