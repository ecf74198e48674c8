#!/usr/bin/env node
// The `flakelab` command of the npm package: finds the binary that the
// platform's package (an optional dependency, `flakelab-<os>-<cpu>`)
// carries and runs it with the same arguments, stdio and exit status.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

// `${process.platform}-${process.arch}` → the package that carries its binary.
// flakelab runs on Linux only (network namespaces, the clock preload).
const PLATFORMS = {
  "linux-x64": "flakelab-linux-x64",
  "linux-arm64": "flakelab-linux-arm64",
};

function fail(message) {
  process.stderr.write(`flakelab: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const platform = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[platform];
  if (!pkg) {
    fail(
      `no flakelab binary for ${platform}: flakelab runs on Linux ` +
        `(${Object.keys(PLATFORMS).join(", ")}). On another system, run it in a ` +
        `Linux container or VM, or build it from source (cargo install --path .).`
    );
  }
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch (e) {
    fail(
      `the package ${pkg}, which carries flakelab's binary for ${platform}, is not ` +
        `installed. It is an optional dependency of flakelab, so an install with ` +
        `--omit=optional (or --no-optional), or a lockfile made on another platform, ` +
        `leaves it out: install it with \`npm install ${pkg}\`.`
    );
  }
  return path.join(path.dirname(manifest), "bin", "flakelab");
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
child.on("error", (e) => fail(`cannot start ${e.path || "the binary"}: ${e.message}`));
// Ctrl-C reaches the whole foreground process group, flakelab included, which
// stops its runs and prints a partial report: wait for it rather than die.
process.on("SIGINT", () => {});
// A signal sent to this launcher alone is passed on.
for (const signal of ["SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code);
  }
});
