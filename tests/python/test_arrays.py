"""NumPy arrays in and out of runs: every dtype, without copies (checked by address)."""

import gc

import numpy as np
import pytest

import blockflow
from conftest import DTYPES, address, sample_values


def identity_session(dtype_name, shape):
    g = blockflow.GraphBuilder()
    x = g.placeholder("x", dtype_name, shape)
    g.Identity(x, name="y")
    return blockflow.Session(g, threads=1)


@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_feed_and_fetch_share_memory_for_every_dtype(dtype_name):
    x = sample_values(dtype_name, (3, 5, 7))
    session = identity_session(dtype_name, [3, 5, 7])
    y, x_back = session.run(["y", "x"], feeds={"x": x})
    for out in (y, x_back):
        assert out.dtype == DTYPES[dtype_name]
        assert out.shape == x.shape
        assert address(out) == address(x)  # read in place, returned without a copy
        assert np.array_equal(out, x)
    # The result keeps the fed array's memory alive on its own.
    expected = x.copy()
    del x
    gc.collect()
    assert np.array_equal(y, expected)


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32", "float64", "int32", "int64"])
def test_kernel_outputs_are_the_tensor_buffers(dtype_name):
    g = blockflow.GraphBuilder()
    a = g.placeholder("a", dtype_name, [64, 33])
    b = g.placeholder("b", dtype_name, [64, 33])
    g.Add(a, b, name="sum")
    session = blockflow.Session(g, threads=1)
    xa, xb = sample_values(dtype_name, (64, 33), 1), sample_values(dtype_name, (64, 33), 2)
    out = session.run("sum", {"a": xa, "b": xb})
    assert isinstance(out, np.ndarray) and out.dtype == DTYPES[dtype_name]
    # No copy: the array's memory is the buffer of the Tensor its base (a capsule) holds.
    assert not out.flags.owndata
    assert blockflow._core._tensor_address(out) == address(out)
    assert out.flags.c_contiguous and out.flags.writeable
    if dtype_name == "bfloat16":
        f = blockflow.bfloat16_to_float32
        want = blockflow.float32_to_bfloat16(f(xa) + f(xb))
    else:
        want = xa + xb
    assert np.array_equal(out, want)
    del session, g
    gc.collect()
    assert np.array_equal(out, want)  # the buffer outlives the session


def test_float16_maps_to_numpy_float16_and_bfloat16_to_uint16():
    g = blockflow.GraphBuilder()
    g.constant(np.array([1.5, -2.25], np.float16), name="h")
    g.constant(blockflow.float32_to_bfloat16(np.array([1.5, -2.25], np.float32)), dtype="bfloat16",
               name="b")
    h, b = blockflow.Session(g).run(["h", "b"])
    assert h.dtype == np.float16 and b.dtype == np.uint16
    assert np.array_equal(blockflow.bfloat16_to_float32(b), np.array([1.5, -2.25], np.float32))


def test_bfloat16_helpers_round_to_nearest_even():
    x = np.array([1.0, 1.00390625, 1.01171875, -0.0, np.inf, np.nan], np.float32)
    bits = blockflow.float32_to_bfloat16(x)
    assert bits.dtype == np.uint16
    assert list(bits[:5]) == [0x3F80, 0x3F80, 0x3F82, 0x8000, 0x7F80]
    back = blockflow.bfloat16_to_float32(bits)
    assert back.dtype == np.float32 and np.isnan(back[5])
    assert np.array_equal(back[:5], np.array([1.0, 1.0, 1.015625, -0.0, np.inf], np.float32))


def test_non_contiguous_and_byte_swapped_arrays_are_copied_once():
    session = identity_session("float32", [4, 3])
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    strided = base[:, ::2]
    assert not strided.flags.c_contiguous
    y = session.run("y", {"x": strided})
    assert np.array_equal(y, strided) and address(y) != address(base)
    swapped = np.arange(12, dtype=">f4").reshape(4, 3)
    y = session.run("y", {"x": swapped})
    assert y.dtype == np.float32 and np.array_equal(y, swapped)


def test_read_only_feeds_come_back_read_only():
    session = identity_session("float32", [2])
    x = np.array([1, 2], np.float32)
    x.flags.writeable = False
    y = session.run("y", {"x": x})
    assert address(y) == address(x) and not y.flags.writeable


def test_lists_numbers_and_zero_sized_arrays_feed():
    session = identity_session("int64", [-1])
    assert session.run("y", {"x": [1, 2, 3]}).tolist() == [1, 2, 3]
    assert session.run("y", {"x": np.zeros(0, np.int64)}).shape == (0,)
    g = blockflow.GraphBuilder()
    g.placeholder("s", "float64", [])
    out = blockflow.Session(g).run("s", {"s": 2.5})
    assert out.shape == () and out.dtype == np.float64 and out == 2.5


def test_single_fetch_returns_an_array_and_a_list_returns_a_list():
    session = identity_session("float32", [2])
    x = np.ones(2, np.float32)
    assert isinstance(session.run("y", {"x": x}), np.ndarray)
    assert isinstance(session.run(["y"], {"x": x}), list)
    assert len(session.run(("y", "x"), {"x": x})) == 2
