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
// the graph. Nodes are placed in columns by dependency depth (core/layout.h).
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
  std::vector<std::string> feeds;    // "name" or "name:K": the graph is cut there
  std::string const_dir = "consts";  // folder, relative to the output graph, for large Const values
  int64_t inline_limit = 64;         // Const values with more elements go to .npy files
};

/// An imported graph plus the Const .npy files it refers to.
struct ImportResult {
  Graph graph;
  std::vector<std::pair<std::string, Tensor>> const_files;  // path relative to the graph → value
  std::vector<std::string> notes;                           // dropped attrs worth knowing about
};

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
/// Writes the graph to `path` and the Const files beside it (each atomically).
Status WriteImport(const ImportResult& result, const std::string& path);
/// The same, but first checks the graph as it will load (Const files included): when
/// it is invalid nothing is written and the error lists every problem, one per line.
Status WriteValidImport(const ImportResult& result, const std::string& path,
                        const OpRegistry& registry);

}  // namespace blockflow::tfimport
