#!/bin/bash
# Lint what this project writes: shellcheck (warnings and worse) over the
# workbench's and the benchmarks' shell scripts, ruff (settings in
# ruff.toml) over their Python, the tools' and the tests, and both over the selftests the
# series adds to the tree in SRC (files it only changes are mainline's
# style). One result per linter in the JSON list $1; the findings in
# lint-<linter>.log beside it.
. "$(dirname "$0")/../lib.sh"
out=$1
rm -f "$out"
logs=$(dirname "$out")

added_selftests() { # EXTENSION
	git -C "$SRC" diff --name-only --diff-filter=A "$(base_tag)" HEAD -- \
		tools/testing/selftests | grep "\.$1\$" | sed "s#^#$SRC/#"
}

# lint NAME CMD...: one result for NAME, its output in lint-NAME.log.
lint() {
	local name=$1 log=$logs/lint-$1.log
	shift
	if "$@" >"$log" 2>&1; then
		add_result "$out" "lint:$name" static pass
	else
		add_result "$out" "lint:$name" static fail \
			"$(grep -c . "$log") lines of findings, see ${log#"$TOP"/}"
	fi
}

mapfile -t shell < <(find "$TOP/workbench" "$TOP/bench" -name '*.sh' | sort)
mapfile -t shell_tests < <(added_selftests sh)
run_shellcheck() {
	local rc=0
	shellcheck -x -S warning "${shell[@]}" || rc=1
	# SC2154: the kselftest libraries the tests source by a computed
	# path define ksft_skip and friends, which shellcheck cannot follow.
	# A subset of the series (make test-subsets) may add no shell test.
	[ ${#shell_tests[@]} = 0 ] || shellcheck -S warning -e SC2154 "${shell_tests[@]}" || rc=1
	return $rc
}
lint shellcheck run_shellcheck
mapfile -t python_tests < <(added_selftests py)
lint ruff "$VENV/bin/ruff" check --config "$TOP/ruff.toml" --no-cache --output-format concise \
	"$TOP/workbench" "$TOP/tools" "$TOP/bench" "$TOP/tests" "${python_tests[@]}"
