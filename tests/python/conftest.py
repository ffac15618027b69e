"""Shared fixtures of the Python module's tests. CTest sets PYTHONPATH (the built module),
BLOCKFLOW_BINARY (the `blockflow` program) and BLOCKFLOW_SOURCE_DIR; by hand:
PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python"""

import os
import pathlib

import numpy as np
import pytest

SOURCE_DIR = pathlib.Path(
    os.environ.get("BLOCKFLOW_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2])
)
BINARY = pathlib.Path(os.environ.get("BLOCKFLOW_BINARY", SOURCE_DIR / "build" / "bin" / "blockflow"))

# The six numeric dtypes (bfloat16 travels as uint16 bits) and bool.
DTYPES = {
    "float16": np.float16,
    "bfloat16": np.uint16,
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "int64": np.int64,
    "bool": np.bool_,
}


def address(array):
    """The address of an array's first byte."""
    return array.__array_interface__["data"][0]


def sample_values(dtype_name, shape, seed=0):
    """Deterministic values of a blockflow dtype, as the array that feeds it."""
    rng = np.random.default_rng(seed)
    if dtype_name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype_name in ("int32", "int64"):
        return rng.integers(-1000, 1000, size=shape).astype(DTYPES[dtype_name])
    values = rng.standard_normal(shape).astype(np.float32)
    if dtype_name == "bfloat16":
        import blockflow

        return blockflow.float32_to_bfloat16(values)
    return values.astype(DTYPES[dtype_name])


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def binary():
    if not BINARY.exists():
        pytest.skip("the blockflow program is not built: %s" % BINARY)
    return BINARY
