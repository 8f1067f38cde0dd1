#!/bin/bash
# make docs: audit the base's drivers into docs/napi-audit.json, which
# make test checks its own audit against, and regenerate docs/testing.md's
# pattern table from it (workbench/report/pattern-table.py).
. "$(dirname "$0")/../lib.sh"
tag=$(base_tag)
"$TOP/tools/napi-audit.py" --git "$REPO" --rev "$tag" --name "$tag" \
	--json "$TOP/docs/napi-audit.json" >/dev/null
"$TOP/workbench/report/pattern-table.py" --write "$TOP/docs/testing.md"
echo "docs/napi-audit.json and docs/testing.md's pattern table: from $tag"
