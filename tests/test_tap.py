import tap
from conftest import fixture_text


def parse(name):
    return tap.parse(fixture_text(name))


def test_nested_cases_and_top_result():
    tops = parse("napi_config.tap")
    assert len(tops) == 1
    top = tops[0]
    assert top["name"] == "selftests: net: napi_config.py"
    assert top["status"] == "fail"
    assert [c["status"] for c in top["cases"]] == ["pass", "fail", "skip", "pass"]
    assert top["cases"][2]["reason"] == "cannot run in a user namespace"


def test_timeout_is_failure():
    top = parse("timeout.tap")[0]
    assert top["status"] == "fail"
    assert top["directive"] == "TIMEOUT"


def test_skip_directive():
    assert parse("skip.tap")[0]["status"] == "skip"


def test_xfail():
    tops = tap.parse("not ok 1 something # XFAIL known\n")
    assert tops[0]["status"] == "xfail"


def test_truncated_output_fails():
    tops = tap.parse("# ok 1 a\n# ok 2 b\n")
    assert tops[-1]["status"] == "fail"
    assert len(tops[-1]["cases"]) == 2


def test_no_results():
    assert not tap.parse("random noise\n")


def test_plain_comment_is_a_reason():
    top = tap.parse("not ok 1 selftests: net: x.py # exit=1\n")[0]
    assert top["status"] == "fail"
    assert top["directive"] is None and top["reason"] == "exit=1"


def test_a_case_keeps_the_diagnostics_printed_before_it():
    tops = tap.parse("# # setup chatter\n# ok 1 a.first\n# # one\n# # Check| At x.py, line 3\n"
                     "# # Check|     ksft_ge(n, 1)\n# # Check failed 0 < 1 no poll\n"
                     "# not ok 2 a.second\nnot ok 1 selftests: net: a.py # exit=1\n")
    first, second = tops[0]["cases"]
    assert first["diagnostics"] == ["setup chatter"]
    assert second["diagnostics"] == ["Check| At x.py, line 3", "Check|     ksft_ge(n, 1)",
                                     "Check failed 0 < 1 no poll"]


# What napi_races.py printed on a UP kernel: a failed check, then the
# case raised KsftSkipEx, and ksft.py exited 0.
FAILED_THEN_SKIPPED = (
    "# # 40 switches to busy polling during busy polls, each with a 100 ms ring clean; "
    "watchdog armed after the switch in 0, polls during the cleans: 2260432, in 40 cleans\n"
    "# # Check| At /root/ksft/net/napi_races.py, line 912, in synchronize_vs_busy_poll_stop:\n"
    "# # Check|     ksft_eq(bad, 0, \"NAPI polled after napi_synchronize() returned\")\n"
    "# # Check failed 2260432 != 0 NAPI polled after napi_synchronize() returned\n"
    "# not ok 7 napi_races.synchronize_vs_busy_poll_stop # SKIP no watchdog armed between a "
    "switch and its clean: race not hit\n"
    "# ok 8 napi_races.threaded_vs_driver_napi_readd\n"
    "# # Totals: pass:1 fail:0 xfail:0 xpass:0 skip:1 error:0\n"
    "ok 1 selftests: net: napi_races.py\n")


def test_a_failed_check_then_a_skip_is_a_failure():
    cases = tap.parse(FAILED_THEN_SKIPPED)[0]["cases"]
    assert [c["status"] for c in cases] == ["fail", "pass"]


def test_not_ok_with_skip_is_a_failure():
    cases = tap.parse("# not ok 1 a.case # SKIP why\nok 1 selftests: net: a.py\n")[0]["cases"]
    assert cases[0]["status"] == "fail"


def test_a_failed_check_then_xfail_is_a_failure():
    cases = tap.parse("# # Check failed 1 != 0 x\n# not ok 1 a.case # XFAIL known\n"
                      "ok 1 selftests: net: a.py\n")[0]["cases"]
    assert cases[0]["status"] == "fail"


def test_a_failed_check_counts_only_for_its_own_case():
    cases = tap.parse("# # Check failed 1 != 0 x\n# not ok 1 a.first\n"
                      "# ok 2 a.second # SKIP honest\nnot ok 1 selftests: net: a.py\n")[0]["cases"]
    assert [c["status"] for c in cases] == ["fail", "skip"]
