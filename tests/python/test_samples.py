"""Every sample graph gives, through Python, the bits `blockflow run` writes."""

import json
import subprocess

import numpy as np
import pytest

import blockflow
from conftest import SOURCE_DIR

SAMPLES = sorted((SOURCE_DIR / "samples").glob("*.json"))


def ui_feeds(path):
    """Placeholder id -> the .npy file its `ui.feed` suggests (relative to the graph)."""
    nodes = json.loads(path.read_text())["nodes"]
    return {
        n["id"]: path.parent / n["ui"]["feed"]
        for n in nodes
        if n["op"] == "Placeholder" and "feed" in n.get("ui", {})
    }


def out_file(out_dir, fetch):
    """Where `blockflow run --out` writes a fetch: ID.npy for output 0, else ID.K.npy."""
    node, _, k = fetch.partition(":")
    return out_dir / (node + ("." + k if k and k != "0" else "") + ".npy")


def test_there_are_samples():
    assert len(SAMPLES) >= 5


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_matches_the_cli_bitwise(path, binary, tmp_path):
    feeds = ui_feeds(path)
    args = [str(binary), "run", str(path), "--out", str(tmp_path)]
    for node_id, file in feeds.items():
        args += ["--feed", "%s=%s" % (node_id, file)]
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    graph = blockflow.Graph.load(str(path))
    session = blockflow.Session(graph)
    fetches = session.default_fetches()
    arrays = {node_id: np.load(file) for node_id, file in feeds.items()}
    outputs = session.run(fetches, feeds=arrays)
    assert len(outputs) == len(fetches) > 0
    for fetch, got in zip(fetches, outputs):
        want = np.load(out_file(tmp_path, fetch))
        assert got.dtype == want.dtype and got.shape == want.shape, fetch
        assert got.tobytes() == want.tobytes(), "%s differs from the CLI's %s" % (fetch, path.name)
