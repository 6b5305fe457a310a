// The answer classes of grading_classes.tsv: equal answers that mature graders accept, each with
// negatives that must stay different.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "rewards/grader.h"

namespace allot::rewards {
namespace {

struct Row {
  int line;
  std::string cls;
  bool expected;
  bool wrap;
  std::string pred, gold;
};

std::string Newlines(std::string s) {
  static const std::string kPilcrow = "\xC2\xB6";  // ¶
  for (size_t p = s.find(kPilcrow); p != std::string::npos; p = s.find(kPilcrow, p + 1)) {
    s.replace(p, kPilcrow.size(), "\n");
  }
  return s;
}

std::vector<Row> LoadRows() {
  std::ifstream in(std::string(ALLOT_TEST_DATA_DIR) + "/rewards/grading_classes.tsv");
  std::vector<Row> rows;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string col; std::getline(ss, col, '\t');) cols.push_back(col);
    EXPECT_EQ(cols.size(), 5u) << "grading_classes.tsv:" << n;
    if (cols.size() != 5) continue;
    rows.push_back({n, cols[0], cols[1] == "1", cols[2] == "all", Newlines(cols[3]), cols[4]});
  }
  return rows;
}

TEST(GradingClassesTest, EveryClassAgreesWithTheTable) {
  const std::vector<Row> rows = LoadRows();
  ASSERT_GE(rows.size(), 140u);
  std::map<std::string, std::pair<int, int>> per_class;  // class -> (failed, total)
  for (const Row& row : rows) {
    std::vector<std::pair<std::string, AnswerFormat>> variants;
    if (row.wrap) {
      variants.push_back({"\\boxed{" + row.pred + "}", AnswerFormat::kBoxed});
      variants.push_back({"The answer is $" + row.pred + "$.", AnswerFormat::kBoxed});
      variants.push_back({row.pred, AnswerFormat::kBoxed});
    } else {
      variants.push_back({row.pred, AnswerFormat::kBoxed});
      if (row.cls == "choice") variants.push_back({row.pred, AnswerFormat::kChoice});
    }
    for (const auto& [response, format] : variants) {
      GradeResult r = Grade(response, row.gold, format);
      auto& [failed, total] = per_class[row.cls + (row.expected ? "+" : "-")];
      ++total;
      if (r.correct != row.expected) {
        ++failed;
        ADD_FAILURE() << "grading_classes.tsv:" << row.line << " (" << row.cls << ", "
                      << AnswerFormatName(format) << "): '" << response << "' vs '" << row.gold
                      << "' expected " << (row.expected ? "correct" : "incorrect") << ", got '"
                      << r.pred.text << "' (" << r.pred.method << ") " << r.reason;
      }
    }
  }
  for (const auto& [cls, counts] : per_class) {
    std::cout << "class " << cls << ": " << counts.first << " of " << counts.second
              << " cases fail\n";
  }
}

}  // namespace
}  // namespace allot::rewards
