#include "server/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "server/prometheus_check.h"

namespace herd::server {
namespace {

TEST(PrometheusTextTest, EscapesAndValues) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeHelp("x\\y\"z\nw"), "x\\\\y\"z\\nw");  // quotes stay in HELP
  EXPECT_EQ(FormatMetricValue(3), "3");
  EXPECT_EQ(FormatMetricValue(0), "0");
  EXPECT_EQ(FormatMetricValue(0.25), "0.25");
  EXPECT_EQ(FormatMetricValue(0.001), "0.001");
  EXPECT_EQ(FormatMetricValue(-2.5), "-2.5");
  EXPECT_EQ(FormatMetricValue(1234567890123.0), "1234567890123");
  EXPECT_EQ(FormatMetricValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatMetricValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatMetricValue(NAN), "NaN");
}

TEST(PrometheusTextTest, ExactText) {
  Histogram h({0.1, 1.0});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(7.0);
  PrometheusWriter w;
  w.Family("x:requests_total", "counter", "Requests.\nAll of them.");
  w.Sample("x:requests_total", {{"model_name", "a\"b"}, {"status", "200"}}, 3);
  w.Sample("x:requests_total", {{"model_name", "c\\d"}, {"status", "500"}}, 0);
  w.Family("x:latency_seconds", "histogram", "Latency.");
  w.Histogram("x:latency_seconds", {{"model_name", "m"}}, h.Snapshot());
  w.Family("x_up", "gauge", "Up.");
  w.Sample("x_up", {}, 1);
  EXPECT_EQ(w.text(),
            "# HELP x:requests_total Requests.\\nAll of them.\n"
            "# TYPE x:requests_total counter\n"
            "x:requests_total{model_name=\"a\\\"b\",status=\"200\"} 3\n"
            "x:requests_total{model_name=\"c\\\\d\",status=\"500\"} 0\n"
            "# HELP x:latency_seconds Latency.\n"
            "# TYPE x:latency_seconds histogram\n"
            "x:latency_seconds_bucket{model_name=\"m\",le=\"0.1\"} 1\n"
            "x:latency_seconds_bucket{model_name=\"m\",le=\"1\"} 3\n"
            "x:latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4\n"
            "x:latency_seconds_sum{model_name=\"m\"} 8.05\n"
            "x:latency_seconds_count{model_name=\"m\"} 4\n"
            "# HELP x_up Up.\n"
            "# TYPE x_up gauge\n"
            "x_up 1\n");

  // The strict parser reads it back.
  testing::Exposition e;
  std::string error;
  ASSERT_TRUE(testing::ParseExposition(w.text(), &e, &error)) << error;
  EXPECT_EQ(e.samples.at("x:requests_total{model_name=\"a\\\"b\",status=\"200\"}"), 3);
  EXPECT_EQ(e.samples.at("x:latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"}"), 4);
  EXPECT_EQ(e.types.at("x:latency_seconds"), "histogram");
  EXPECT_EQ(e.help.at("x:requests_total"), "Requests.\nAll of them.");
}

// The checker itself must reject what breaks the format, or the route tests prove nothing.
TEST(PrometheusTextTest, CheckerRejectsBrokenExpositions) {
  const char* bad[] = {
      "x 1\n",                                                           // no TYPE
      "# TYPE x counter\nx{a=\"1} 1\n",                                  // unterminated value
      "# TYPE x counter\nx{a=\"\\t\"} 1\n",                              // bad escape
      "# TYPE x counter\nx 1\n# TYPE y gauge\ny 1\n# TYPE x counter\n",  // family declared twice
      "# TYPE x counter\ny 1\n",                                         // sample outside its family
      "# TYPE x counter\nx one\n",                                       // bad value
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",  // not cumulative
      "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",                           // no +Inf
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",                        // count != +Inf
      "# TYPE x counter\nx 1",                                                                    // no final newline
  };
  for (const char* text : bad) {
    testing::Exposition e;
    std::string error;
    EXPECT_FALSE(testing::ParseExposition(text, &e, &error)) << text;
  }
}

}  // namespace
}  // namespace herd::server
