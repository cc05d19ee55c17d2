"""The committed dashboards/ and alerts/ are exactly what the generator writes for the defaults."""

import os

from fabric_exporter.mixin import generate


def test_committed_output_equals_fresh_generation(repo):
    fresh = generate.render()
    stale = []
    for rel, content in sorted(fresh.items()):
        path = os.path.join(repo, rel)
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != content:
            stale.append(rel)
    assert not stale, ("out of date (run `PYTHONPATH=exporter python -m fabric_exporter.mixin.generate --out .`): "
                       + ", ".join(stale))
    # and nothing generated-looking lingers that the generator no longer writes
    for folder, ext in (("dashboards", ".json"), ("alerts", ".yaml")):
        on_disk = {f"{folder}/{n}" for n in os.listdir(os.path.join(repo, folder)) if n.endswith(ext)}
        assert on_disk == {rel for rel in fresh if rel.startswith(folder + "/") and rel.endswith(ext)}


def test_generation_is_deterministic():
    assert generate.render() == generate.render()


def test_main_writes_files(tmp_path, capsys):
    assert generate.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "alerts" / generate.RULE_FILE).exists()
    assert generate.main(["--out", str(tmp_path), "--settings", str(tmp_path / "missing.yaml")]) == 2
    assert generate.main(["--print-defaults"]) == 0
    assert "thresholds:" in capsys.readouterr().out


def test_the_cli_generate_takes_the_generators_options(tmp_path, capsys):
    from fabric_exporter.cli import main as cli_main

    assert cli_main(["generate", "--print-defaults"]) == 0  # the main CLI once demanded --out here
    assert "thresholds:" in capsys.readouterr().out
    assert cli_main(["generate", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "alerts" / generate.RULE_FILE).exists()
