// blockflow: the headless command-line program. Everything lives in runtime/cli.cc.
#include <iostream>
#include <string>
#include <vector>

#include "runtime/cli.h"

int main(int argc, char** argv) {
  blockflow::cli::InstallSigintHandler();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return blockflow::cli::Main(args, std::cout, std::cerr);
}
