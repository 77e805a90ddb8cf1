// The validator accepts every generated plan and rejects broken ones with a message
// naming the instruction at fault; plans survive a JSON round trip.
#include <gtest/gtest.h>

#include "graph/zoo/model_zoo.h"
#include "plan/plan_validator.h"
#include "planner/baselines/baseline_plans.h"
#include "tiny_models.h"

namespace monet {
namespace {

Graph tiny(const std::string& name) {
  for (const auto& t : testing::tiny_models())
    if (t.name == name) return build_zoo_model(t.name, t.config);
  throw std::logic_error("no tiny " + name);
}

std::string rejection(const Graph& g, const Plan& plan) {
  try {
    validate_plan(g, plan);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "";
}

TEST(PlanValidator, AcceptsGeneratedPlans) {
  for (const auto& t : testing::tiny_models()) {
    const Graph g = build_zoo_model(t.name, t.config);
    EXPECT_EQ(rejection(g, store_all_plan(g)), "") << t.name;
    EXPECT_EQ(rejection(g, chen_plan(g)), "") << t.name;
    for (uint64_t seed = 0; seed < 5; ++seed)
      EXPECT_EQ(rejection(g, random_plan(g, seed)), "") << t.name;
  }
}

TEST(PlanValidator, RejectsATruncatedPlan) {
  const Graph g = tiny("resnet18");
  Plan plan = store_all_plan(g);
  plan.program.pop_back();  // the first conv's weight-gradient step
  const std::string why = rejection(g, plan);
  EXPECT_NE(why.find("misses a gradient"), std::string::npos) << why;
  EXPECT_NE(why.find("conv1.weight"), std::string::npos) << why;
}

TEST(PlanValidator, RejectsReadingAFreedTensor) {
  const Graph g = tiny("vgg11");
  Plan plan = store_all_plan(g);
  // Free the first conv's output right after computing it: its ReLU reads it next.
  plan.program.insert(plan.program.begin() + 1,
                      {InstrKind::kFree, 0, "", BackwardPart::kAll, Slot::kOutput});
  const std::string why = rejection(g, plan);
  EXPECT_NE(why.find("plan instruction 2 (forward features.1 [inplace])"), std::string::npos)
      << why;
  EXPECT_NE(why.find("which instruction 1 freed"), std::string::npos) << why;
}

TEST(PlanValidator, RejectsReadingATensorOverwrittenInPlace) {
  const Graph g = tiny("resnet18");
  Plan plan = store_all_plan(g);
  // bn1's output is overwritten by the in-place ReLU; an output-activated batch-norm
  // backward would read the overwritten tensor.
  for (auto& in : plan.program)
    if (in.kind == InstrKind::kBackward && g.node(in.node).name == "bn1") in.impl = "output";
  const std::string why = rejection(g, plan);
  EXPECT_NE(why.find("backward bn1 all [output]"), std::string::npos) << why;
  EXPECT_NE(why.find("overwrote in place"), std::string::npos) << why;
}

TEST(PlanValidator, RejectsAnIntermediateOfAnotherKind) {
  const Graph g = tiny("resnet18");
  Plan plan = store_all_plan(g);
  // The max pool's forward keeps 8-bit window offsets; its backward reads int64 indices.
  int pool = -1;
  for (auto& in : plan.program)
    if (g.node(in.node).op == OpKind::kMaxPool && in.kind == InstrKind::kForward) {
      in.impl = "argmax8";
      pool = in.node;
    }
  ASSERT_GE(pool, 0);
  std::string why = rejection(g, plan);
  EXPECT_NE(why.find("reads the intermediate forward implementation 'argmax8' emitted"),
            std::string::npos)
      << why;
  // Emitted again by a recomputation of the right kind just before the backward: accepted.
  for (size_t i = 0; i < plan.program.size(); ++i)
    if (plan.program[i].kind == InstrKind::kBackward && plan.program[i].node == pool) {
      plan.program.insert(plan.program.begin() + i, {InstrKind::kForward, pool, "default",
                                                     BackwardPart::kAll, Slot::kOutput});
      break;
    }
  why = rejection(g, plan);
  EXPECT_EQ(why, "");
}

TEST(PlanValidator, RejectsABackwardBeforeItsGradientIsComplete) {
  const Graph g = tiny("resnet18");
  Plan plan = store_all_plan(g);
  // Move the first backward instruction (the loss) to the end.
  auto first = std::find_if(plan.program.begin(), plan.program.end(),
                            [](const Instruction& in) { return in.kind == InstrKind::kBackward; });
  const Instruction loss = *first;
  plan.program.erase(first);
  plan.program.push_back(loss);
  EXPECT_NE(rejection(g, plan).find("is not complete"), std::string::npos) << rejection(g, plan);
}

TEST(PlanValidator, RejectsAPlanForAnotherShape) {
  const Graph g = tiny("resnet18");
  ModelConfig c = testing::tiny_models()[0].config;
  c.batch += 1;
  const Graph other = build_zoo_model("resnet18", c);
  EXPECT_NE(rejection(g, store_all_plan(other)).find("another graph"), std::string::npos);
}

TEST(PlanJson, RoundTripsAndChecksNames) {
  const Graph g = tiny("googlenet");
  const Plan plan = random_plan(g, 3);
  const auto json = plan_to_json(g, plan);
  const Plan back = plan_from_json(g, json);
  ASSERT_EQ(back.program.size(), plan.program.size());
  for (size_t i = 0; i < plan.program.size(); ++i) {
    EXPECT_EQ(back.program[i].node, plan.program[i].node);
    EXPECT_EQ(back.program[i].impl, plan.program[i].impl);
    EXPECT_EQ(back.program[i].kind, plan.program[i].kind);
  }
  auto bad = json;
  bad["program"][5]["impl"] = "warp_drive";
  try {
    plan_from_json(g, bad);
    FAIL();
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("plan instruction 5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("warp_drive"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace monet
