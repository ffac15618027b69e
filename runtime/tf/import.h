// TensorFlow GraphDef import: binary .pb, text .pbtxt (tf.io.write_graph) or
// protobuf JSON, to a blockflow graph. The steps live beside this file: graphdef.h reads,
// values.h decodes values, plan.h chooses the nodes, mapping.h makes them blockflow nodes,
// and write.cc writes the result.
//
//   tfimport::ImportOptions opt;
//   opt.fetches = {"gradients/conv_grad/Conv2DBackpropFilter"};
//   opt.feeds = {"gradients/Relu_grad/ReluGrad"};   // cut here: becomes a Placeholder
//   ASSIGN_OR_RETURN(tfimport::ImportResult r,
//                    tfimport::ImportGraphDefFile("g.pbtxt", opt, OpRegistry::Global()));
//   RETURN_IF_ERROR(tfimport::WriteValidImport(r, "g.json", OpRegistry::Global()));
//
// Rules: control inputs ("^name") only order execution in TensorFlow and are
// dropped; attrs that only matter to TensorFlow (T, Tshape, use_cudnn_on_gpu,
// "_"-prefixed...) are dropped; other attrs map to graph JSON (list(int) → ints,
// string → string, type → dtype name, shape → list). Input ports are the block
// schema's, in order, with a list port taking the remaining inputs. Const values
// with at most `inline_limit` elements are written inline (integers exactly, NaN and
// Inf as the strings "nan", "inf", "-inf"), larger ones to `const_dir/ID.npy` beside
// the graph. Nodes get no positions: the editor lays the graph out as it opens it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/schema.h"
#include "core/tensor.h"

namespace blockflow::tfimport {

/// How the GraphDef bytes are encoded.
enum class GraphDefFormat { kAuto, kBinary, kText, kJson };

/// What to import.
struct ImportOptions {
  std::vector<std::string> fetches;  // node names ("name" or "name:K"); empty: every node
  // Tensors where the graph is cut, each becoming a Placeholder: "NAME[:K]" (dtype and shape
  // from the GraphDef or inferred), "NAME[:K]=FILE.npy" (from the file, which becomes the
  // Placeholder's ui.feed) or "NAME[:K]:DTYPE[d0,d1,...]" (given; -1 for a free size).
  std::vector<std::string> feeds;
  std::string const_dir = "consts";  // folder, relative to the output graph, for large Const values
  int64_t inline_limit = 64;         // Const values with more elements go to .npy files
  std::string graph_dir = ".";       // the output graph's folder: --feed files are named from it
  bool cut_unsupported = false;      // cut every tensor that an op blockflow lacks produces
  bool ignore_unused_feeds = false;  // a --feed no kept node reads is no error
  size_t detail_lines = 20;          // per-node lines in the summary of a failed import; 0: all
  uint64_t memory_limit = 0;         // largest Const value decoded (core/limits.h; 0: default)
};

/// An imported graph plus the Const .npy files it refers to.
struct ImportResult {
  Graph graph;
  std::vector<std::pair<std::string, Tensor>> const_files;  // path relative to the graph → value
  std::vector<std::string> notes;                           // dropped attrs worth knowing about
};

/// One convolution node of `--gradients`: its own runnable graph, or why there is none.
struct GradientImport {
  std::string node;              // the NodeDef's name
  std::string op;                // one of the six convolution ops
  std::string geometry;          // "x [2,8,8,3] w [3,3,3,4] y [2,8,8,4] s 1,1 SAME NHWC"
  std::vector<std::string> fed;  // the Placeholders the graph is cut at
  std::string file;              // its file name: the node's name, '/' as '.', and ".json"
  Status status;                 // OK, or why the node has no graph
  ImportResult result;           // the graph when status is OK
};

/// Every convolution node of a GraphDef (Conv2D, DepthwiseConv2dNative and their gradients),
/// each imported on its own: fetched, and cut at the nearest tensors blockflow cannot compute
/// (the outputs of ops it lacks), whose shapes are inferred. `options.fetches` and
/// `options.const_dir` are ignored (each graph's Const files go to FILE_consts/); the feeds
/// apply where a node reads them. Fails only when the GraphDef cannot be read or holds
/// no convolution.
Expected<std::vector<GradientImport>> ImportGradients(const std::string& bytes,
                                                      const std::string& origin,
                                                      GraphDefFormat format,
                                                      const ImportOptions& options,
                                                      const OpRegistry& registry);
/// The same from a file.
Expected<std::vector<GradientImport>> ImportGradientsFile(const std::string& path,
                                                          const ImportOptions& options,
                                                          const OpRegistry& registry);
/// One graph holding every node of `gradients` whose status is OK (--single).
Expected<ImportResult> ImportGradientsTogether(const std::string& bytes, const std::string& origin,
                                               GraphDefFormat format,
                                               const std::vector<GradientImport>& gradients,
                                               const ImportOptions& options,
                                               const OpRegistry& registry);

/// The format implied by a file name (.pb/.graphdef → binary, .pbtxt/.txt/.pbtext → text,
/// .json → JSON), else by sniffing the bytes.
GraphDefFormat DetectFormat(const std::string& path, const std::string& bytes);

/// Imports GraphDef bytes; `origin` names the source in messages. Every problem found
/// (unsupported ops, bad inputs) is reported, one per line of the error message.
Expected<ImportResult> ImportGraphDef(const std::string& bytes, const std::string& origin,
                                      GraphDefFormat format, const ImportOptions& options,
                                      const OpRegistry& registry);
/// Reads and imports a GraphDef file.
Expected<ImportResult> ImportGraphDefFile(const std::string& path, const ImportOptions& options,
                                          const OpRegistry& registry);
/// Reads a GraphDef file's bytes and format.
Expected<std::pair<std::string, GraphDefFormat>> ReadGraphDefFile(const std::string& path);
/// Writes the graph to `path` and the Const files beside it (each atomically).
Status WriteImport(const ImportResult& result, const std::string& path);
/// The same, but first checks the graph as it will load (Const files included): when
/// it is invalid nothing is written and the error (kInvalidArgument) lists every problem, one
/// per line; a failed write is a kIo error.
Status WriteValidImport(const ImportResult& result, const std::string& path,
                        const OpRegistry& registry);

}  // namespace blockflow::tfimport
