// The convolution shape suite (bench/shapes.json), read once for the benchmarks and the compare
// tests alike, as XNNPACK's kernel lists drive both (one list of shapes, no second copy).
//
//   Expected<std::vector<SuiteShape>> suite = LoadShapeSuite(BF_BENCH_SHAPES);
//   for (const SuiteShape& s : *suite)
//     for (ConvOp op : s.ops) { ConvState state = *s.State(op); ... }
#pragma once

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "blocks/conv/conv_kernels.h"

namespace blockflow::conv {

/// One shape of the suite: NHWC float32 tensors, attrs strides and padding.
struct SuiteShape {
  std::string name;
  bool depthwise = false;
  bool naive = false;  // small enough for the reference kernels at full size
  nlohmann::json attrs;
  Shape input, filter, output;
  double gflop = 0;
  std::vector<ConvOp> ops;  // the suite's ops, and for a Conv2D shape the forward Conv2D last

  /// The prepared state of `op` on this shape, or (as tests shrink shapes) on other input dims.
  Expected<ConvState> State(ConvOp op) const { return State(op, input); }
  Expected<ConvState> State(ConvOp op, const Shape& in) const {
    return MakeConvState(op, AttrMap(attrs), in, filter, depthwise);
  }
  /// The same problem in NCHW: `in` (NHWC order) and the strides permuted, data_format NCHW.
  Expected<ConvState> StateNCHW(ConvOp op, const Shape& in) const {
    nlohmann::json a = attrs;
    const std::vector<int64_t> s = attrs.at("strides").get<std::vector<int64_t>>();
    a["strides"] = std::vector<int64_t>{s[0], s[3], s[1], s[2]};
    a["data_format"] = "NCHW";
    return MakeConvState(op, AttrMap(a), ToNCHW(in), filter, depthwise);
  }
  /// An NHWC shape's dims in NCHW order.
  static Shape ToNCHW(const Shape& nhwc) {
    return Shape{nhwc.dim(0), nhwc.dim(3), nhwc.dim(1), nhwc.dim(2)};
  }
};

/// Reads the suite at `path`; every shape's listed output, pads and GFLOP must agree with the
/// geometry blockflow computes.
inline Expected<std::vector<SuiteShape>> LoadShapeSuite(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot open shape suite '" + path + "'");
  std::vector<SuiteShape> out;
  try {
    const nlohmann::json suite = nlohmann::json::parse(f);
    for (const nlohmann::json& j : suite.at("shapes")) {
      SuiteShape s;
      s.name = j.at("name").get<std::string>();
      s.depthwise = j.at("kind") == "depthwise";
      s.naive = j.value("naive", false);
      s.attrs = nlohmann::json{{"strides", j.at("strides")}, {"padding", j.at("padding")}};
      s.input = Shape(j.at("input").get<std::vector<int64_t>>());
      s.filter = Shape(j.at("filter").get<std::vector<int64_t>>());
      std::vector<std::string> names = j.at("ops").get<std::vector<std::string>>();
      if (!s.depthwise) names.push_back("Conv2D");
      for (const std::string& name : names) {
        bool found = false;
        for (ConvOp op : {ConvOp::kForward, ConvOp::kBackpropInput, ConvOp::kBackpropFilter}) {
          if (name == ConvOpName(op, s.depthwise)) {
            s.ops.push_back(op);
            found = true;
          }
        }
        if (!found) return InvalidArgument("shape '" + s.name + "': unknown op " + name);
      }
      ASSIGN_OR_RETURN(ConvState state, s.State(ConvOp::kForward));
      const ConvGeometry& g = state.geometry;
      s.output = OutputShape(state.attrs, g);
      s.gflop = g.Flops() / 1e9;
      const std::vector<int64_t> pads = {g.pad_top, g.pad_bottom, g.pad_left, g.pad_right};
      if (s.output != Shape(j.at("output").get<std::vector<int64_t>>()) ||
          pads != j.at("pads_tblr").get<std::vector<int64_t>>() ||
          std::abs(s.gflop - j.at("gflop").get<double>()) > 1e-5) {
        return InvalidArgument("shape '" + s.name + "': output " + s.output.ToString() + " pads " +
                               IntsToString(pads) + " flops " + std::to_string(s.gflop) +
                               " differ from the suite");
      }
      out.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument("shape suite '" + path + "': " + e.what());
  }
  return out;
}

/// A float32 tensor of uniform values in [-1, 1), the same for the same seed.
inline Tensor RandomTensor(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = u(rng);
  return t;
}

}  // namespace blockflow::conv
