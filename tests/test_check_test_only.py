import os
import subprocess

import pytest

from conftest import WORKBENCH, load_script

check = load_script("check_test_only", os.path.join(WORKBENCH, "checks", "check-test-only.py"))

SERIES = ("# 08-irq-affinity: net: napi: keep the IRQ affinity\n08-irq-affinity/0001-a.patch\n"
          "# 09-test-tooling: net: NAPI race and stress test tooling (not for merging)\n"
          "09-test-tooling/0001-b.patch\n09-test-tooling/0002-c.patch\n")
BEFORE = "static void f(int t)\n{\n\tif (t)\n\t\tg();\n}\n"
KCONFIG = "config DEBUG_NET_NAPI_RACES\n\tbool \"x\"\n\thelp\n\t  Say N.\n\nconfig OTHER\n"


def tree(tmp_path, after, kconfig=KCONFIG):
    """A git tree: the file before the test-only topic, then its two
    patches (the second changes the file to AFTER)."""
    repo = tmp_path / "src"
    (repo / "net").mkdir(parents=True)

    def commit(text):
        (repo / "net" / "dev.c").write_text(text)
        (repo / "net" / "Kconfig.debug").write_text(kconfig)
        subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
        subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                        "-qm", "x", "--allow-empty"], check=True)
    subprocess.run(["git", "init", "-q", repo], check=True)
    for text in (BEFORE, BEFORE, BEFORE, after):
        commit(text)
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "series").write_text(SERIES)
    config = tmp_path / "config"
    config.mkdir()
    (config / "series.config").write_text("CONFIG_NET=y\n")
    (config / "nodebug.config").write_text("# CONFIG_DEBUG_NET_NAPI_RACES is not set\n")
    return repo, patches, config


def run(repo, patches, config):
    return subprocess.run([os.path.join(WORKBENCH, "checks", "check-test-only.py"), repo, patches, config],
                          capture_output=True, text=True)


def test_the_topic_not_for_merging_is_found():
    assert check.test_only_topic(SERIES) == ("09-test-tooling", 2, 0)


def test_code_outside_the_option_fails(tmp_path):
    after = "static void f(int t)\n{\n\tif (t)\n\t\tg();\n\tif (t)\n\t\tcpu_relax();\n}\n"
    proc = run(*tree(tmp_path, after))
    assert proc.returncode == 1
    assert "net/dev.c: without CONFIG_DEBUG_NET_NAPI_RACES" in proc.stdout
    assert "-> 'if (t)'" in proc.stdout


def test_gated_code_stub_calls_and_braces_pass(tmp_path):
    after = ("#include <linux/debugfs.h>\n#ifdef CONFIG_DEBUG_NET_NAPI_RACES\nvoid h(void);\n"
             "#else\nstatic inline void napi_race_delay(void)\n{\n}\n#endif\n"
             "/* why */\nstatic noinline void f(int t)\n{\n\tif (t) {\n\t\tnapi_race_delay();\n"
             "\t\tg();\n\t}\n\tif (t > 1)\n\t\tnapi_race_delay();\n}\n")
    proc = run(*tree(tmp_path, after))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("09-test-tooling: nothing outside")


@pytest.mark.parametrize("name, text, why", [
    ("series.config", "CONFIG_DEBUG_NET_NAPI_RACES=y\n",
     "config/series.config, which make package merges, sets"),
    ("nodebug.config", "# CONFIG_DEBUG_NET is not set\n",
     "config/nodebug.config does not turn CONFIG_DEBUG_NET_NAPI_RACES off")])
def test_a_package_config_that_leaves_the_option_on_fails(tmp_path, name, text, why):
    repo, patches, config = tree(tmp_path, BEFORE)
    (config / name).write_text(text)
    proc = run(repo, patches, config)
    assert proc.returncode == 1
    assert why in proc.stdout


def test_a_default_on_option_fails(tmp_path):
    kconfig = KCONFIG.replace("\thelp", "\tdefault y\n\thelp")
    proc = run(*tree(tmp_path, BEFORE, kconfig))
    assert proc.returncode == 1
    assert "has a default other than n" in proc.stdout
