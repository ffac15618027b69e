// blockflow: the headless command-line program. The commands live in the blockflow_cli library.
#include <iostream>
#include <string>
#include <vector>

#include "runtime/cli.h"

int main(int argc, char** argv) {
  blockflow::cli::InstallSigintHandler();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return blockflow::cli::Main(args, std::cout, std::cerr);
}
