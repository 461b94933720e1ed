#!/usr/bin/env bash
# Lint and validate template.yaml offline, failing on any error or warning:
#   cfn-lint template.yaml                             CloudFormation rules (SAM transformed)
#   sam validate --language-extensions                 the SAM transform itself, after the
#                                                      template's AWS::LanguageExtensions
#   sam validate --lint                                SAM CLI's cfn-lint run
# Also checks that the dashboard body is valid JSON once its ${...} are substituted.
# No AWS account is used: sam validate only needs a region and finds no credentials here.
# Needs cfn-lint and sam in the project virtualenv (infra/scripts/venv.sh):
# ./infra/scripts/aws-tools.sh installs them there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. infra/scripts/venv.sh
TEMPLATE="${1:-template.yaml}"

# Offline: a region for the SAM translator, no profile or real credentials, no telemetry.
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset AWS_PROFILE AWS_SESSION_TOKEN
export SAM_CLI_TELEMETRY=0

for cmd in cfn-lint sam; do
  command -v "$cmd" >/dev/null || {
    echo "lint-template: $cmd not found (looked in $SWITCHYARD_VENV/bin and PATH); run ./infra/scripts/aws-tools.sh first" >&2
    exit 1
  }
done

# cfn-lint exits non-zero on errors (2) and warnings (4); informational findings pass.
echo "lint-template: cfn-lint $TEMPLATE"
cfn-lint --format parseable -- "$TEMPLATE"

echo "lint-template: sam validate --language-extensions"
sam validate --language-extensions --template-file "$TEMPLATE" --region us-east-1

echo "lint-template: sam validate --lint"
sam validate --lint --template-file "$TEMPLATE" --region us-east-1

echo "lint-template: dashboard body"
# Plain Python, no YAML library: the body is the block scalar after `DashboardBody: !Sub |`.
python3 - "$TEMPLATE" <<'PY'
import json, re, sys

lines = open(sys.argv[1]).read().splitlines()
found = 0
for n, line in enumerate(lines):
    m = re.match(r"^(\s*)DashboardBody:\s*!Sub\s*\|\s*$", line)
    if not m:
        continue
    indent = len(m.group(1))
    block = []
    for follow in lines[n + 1:]:
        if follow.strip() and len(follow) - len(follow.lstrip()) <= indent:
            break
        block.append(follow)
    body = "\n".join(block)
    # Every ${Name} substituted by a plausible value, every ${!Literal} unescaped.
    text = re.sub(r"\$\{!([^}]*)\}", r"${\1}", re.sub(r"\$\{([^!}][^}]*)\}", "value-1", body))
    try:
        widgets = json.loads(text)["widgets"]
    except (ValueError, KeyError) as e:
        sys.exit(f"lint-template: line {n + 1}: the dashboard body is not valid JSON: {e}")
    for i, w in enumerate(widgets):
        for key in ("type", "x", "y", "width", "height", "properties"):
            if key not in w:
                sys.exit(f"lint-template: line {n + 1}: widget {i} has no `{key}`")
    found += 1
    print(f"lint-template: dashboard body at line {n + 1}: valid JSON, {len(widgets)} widgets")
if not found:
    sys.exit("lint-template: no `DashboardBody: !Sub |` block in the template")
PY
echo "lint-template: ok"
