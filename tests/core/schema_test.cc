// OpSchema's facts (length, visible_when, file kind, layouts, fed outputs): set by the builder
// on the last attribute or port, read back by AttrIsVisible and PortLayout, refused when
// misplaced; MaxPool, registered only here, carries all it needs.
#include "core/schema.h"

#include <gtest/gtest.h>

#include "blocks/register_blocks.h"
#include "tests/test_blocks.h"

namespace blockflow {
namespace {

using nlohmann::json;

TEST(SchemaFacts, ABlockRegisteredOnlyInATestCarriesItsFacts) {
  OpRegistry registry;
  registry.Register(testing::MaxPoolSchema());
  const OpSchema* s = registry.Find("MaxPool");
  ASSERT_NE(s, nullptr);
  for (const char* name : {"ksize", "strides"}) {
    const AttrDef* def = s->FindAttr(name);
    ASSERT_NE(def, nullptr) << name;
    EXPECT_EQ(def->length, 4) << name;
    EXPECT_TRUE(def->required) << name;
    EXPECT_TRUE(AttrIsVisible(*s, *def, json::object())) << name;
  }
  EXPECT_EQ(s->FindAttr("padding")->length, 0);
  EXPECT_EQ(s->inputs()[0].layout, LayoutRole::kActivation);
  EXPECT_EQ(PortLayout(s->outputs()[0].layout, *s, json::object()), "NHWC");
  EXPECT_EQ(PortLayout(s->outputs()[0].layout, *s, {{"data_format", "NCHW"}}), "NCHW");

  // Its shape function works through the ordinary inference path.
  const AttrMap attrs(json{{"ksize", {1, 2, 2, 1}},
                           {"strides", {1, 2, 2, 1}},
                           {"padding", "VALID"},
                           {"data_format", "NHWC"}});
  const std::string id = "pool", op = "MaxPool";  // InferContext keeps references
  InferContext c(id, op, attrs, {PortInfo{DType::kFloat32, Shape{1, 5, 4, 3}, nullptr}}, {0}, "",
                 nullptr);
  ASSERT_TRUE(s->shape_fn()(c).ok());
  EXPECT_EQ(c.outputs()[0].shape, (Shape{1, 2, 2, 3}));
}

TEST(SchemaFacts, ConvBlocksDeclareTheirFacts) {
  RegisterBuiltinBlocks();
  const OpRegistry& registry = OpRegistry::Global();
  for (const char* op :
       {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}) {
    const OpSchema* s = registry.Find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_EQ(s->FindAttr("strides")->length, 4) << op;
    EXPECT_EQ(s->FindAttr("dilations")->length, 4) << op;
    const AttrDef* pads = s->FindAttr("explicit_paddings");
    EXPECT_EQ(pads->length, 8) << op;
    EXPECT_FALSE(AttrIsVisible(*s, *pads, json::object())) << op;  // padding is required
    EXPECT_FALSE(AttrIsVisible(*s, *pads, {{"padding", "SAME"}})) << op;
    EXPECT_TRUE(AttrIsVisible(*s, *pads, {{"padding", "EXPLICIT"}})) << op;
    const int filter = s->InputIndex("filter");
    if (filter >= 0) {
      EXPECT_EQ(s->inputs()[static_cast<size_t>(filter)].layout, LayoutRole::kFilter) << op;
    }
  }
  const OpSchema* grad = registry.Find("Conv2DBackpropFilter");
  EXPECT_EQ(PortLayout(grad->outputs()[0].layout, *grad, {{"data_format", "NCHW"}}), "HWIO");
  EXPECT_EQ(PortLayout(grad->inputs()[0].layout, *grad, {{"data_format", "NCHW"}}), "NCHW");
  EXPECT_EQ(PortLayout(grad->inputs()[1].layout, *grad, json::object()), "");  // filter_sizes

  const AttrDef* file = registry.Find("Const")->FindAttr("file");
  EXPECT_EQ(file->file_kind, FileKind::kNpy);
  EXPECT_EQ(file->alternative_to, "value");
  EXPECT_EQ(registry.Find("Placeholder")->outputs()[0].feed_file, FileKind::kNpy);
  EXPECT_EQ(registry.Find("Identity")->outputs()[0].feed_file, FileKind::kNone);
}

TEST(SchemaFacts, VisibleWhenReadsTheControllingDefault) {
  OpSchema s("T");
  s.EnumAttr("mode", {"A", "B"}, "B").Attr("extra", AttrType::kInts, json::array());
  s.VisibleWhen("mode", "B");
  const AttrDef& extra = *s.FindAttr("extra");
  EXPECT_EQ(extra.visible_when.attr, "mode");
  EXPECT_TRUE(AttrIsVisible(s, extra, json::object()));
  EXPECT_FALSE(AttrIsVisible(s, extra, {{"mode", "A"}}));
  EXPECT_TRUE(AttrIsVisible(s, *s.FindAttr("mode"), {{"mode", "A"}}));  // no visible_when
}

TEST(SchemaFactsDeathTest, MisplacedFactsAreProgrammerErrors) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(OpSchema("T").Input("x", {DType::kFloat32}).Length(4), "must follow an attribute");
  EXPECT_DEATH(OpSchema("T").Attr("n", AttrType::kInt, 1).Length(4), "needs a list attribute");
  EXPECT_DEATH(OpSchema("T").Attr("p", AttrType::kInts, json::array()).VisibleWhen("mode", "X"),
               "names no earlier attribute 'mode'");
  EXPECT_DEATH(OpSchema("T").Attr("f", AttrType::kInts, json::array()).FileKind(FileKind::kNpy),
               "needs a string attribute");
  EXPECT_DEATH(OpSchema("T").Attr("n", AttrType::kInt, 1).Layout(LayoutRole::kFilter),
               "must follow a port");
  EXPECT_DEATH(OpSchema("T").Input("x", {DType::kFloat32}).FedFrom(FileKind::kNpy),
               "must follow an output");
}

TEST(SchemaFacts, NamesOfTheFacts) {
  EXPECT_EQ(LayoutRoleName(LayoutRole::kActivation), "activation");
  EXPECT_EQ(LayoutRoleName(LayoutRole::kFilter), "filter");
  EXPECT_EQ(LayoutRoleName(LayoutRole::kNone), "");
  EXPECT_EQ(FileKindName(FileKind::kNpy), "npy");
  EXPECT_EQ(FileKindName(FileKind::kNone), "");
  EXPECT_EQ(AttrTypeName(AttrType::kInts), "ints");
  EXPECT_EQ(AttrTypeName(AttrType::kShape), "shape");
}

TEST(KernelContextTest, SetOutputTakesTheTensorOrReturnsTheError) {
  KernelContext k;
  Tensor t(DType::kInt32, Shape{2});
  t.data<int32_t>()[1] = 7;
  ASSERT_TRUE(k.SetOutput(std::move(t)).ok());
  ASSERT_EQ(k.outputs.size(), 1u);
  EXPECT_EQ(k.outputs[0].data<int32_t>()[1], 7);
  const Status s = k.SetOutput(Expected<Tensor>(InvalidArgument("no such shape")));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no such shape"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace blockflow
