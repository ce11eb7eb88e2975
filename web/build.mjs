// Builds the docs UI that the fleetapi binary embeds (api/docsui): the
// Swagger UI bundle and stylesheet from the swagger-ui-dist package in
// node_modules, and this project's page, start script and stylesheet from
// src/. Run `npm ci && npm run build` in web/ (or scripts/build-docs-ui.sh);
// `node build.mjs OUTDIR` builds elsewhere (CI compares with the checked-in
// copy). The output must reference no other host: the build fails if a
// page or stylesheet does.
import { readFileSync, writeFileSync, mkdirSync, rmSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(here, "..", "api", "docsui");
const dist = join(here, "node_modules", "swagger-ui-dist");
const version = JSON.parse(readFileSync(join(dist, "package.json"), "utf8")).version;

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

// The bundles end with a sourceMappingURL comment; the maps are not shipped.
const stripMap = (s) => s.replace(/\n?\/[/*][#@] sourceMappingURL=[^\n]*\s*$/, "\n");

const files = {
  "swagger-ui-bundle.js": stripMap(readFileSync(join(dist, "swagger-ui-bundle.js"), "utf8")),
  "swagger-ui.css": stripMap(readFileSync(join(dist, "swagger-ui.css"), "utf8")),
  "favicon-32x32.png": readFileSync(join(dist, "favicon-32x32.png")),
  "SWAGGER-UI-LICENSE": readFileSync(join(dist, "LICENSE"), "utf8"),
  "SWAGGER-UI-NOTICE": readFileSync(join(dist, "NOTICE"), "utf8"),
  "VERSION": `swagger-ui-dist ${version}\n`,
};
for (const name of readdirSync(join(here, "src"))) {
  files[name] = readFileSync(join(here, "src", name));
}
for (const [name, body] of Object.entries(files)) {
  writeFileSync(join(out, name), body);
}

// No reference to another host from the page or the stylesheets: no
// <script src>, <link href>, url(...) or @import with a scheme or "//".
const remote = /(?:src|href)\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:|\/\/)|url\(\s*["']?\s*(?:https?:|\/\/)|@import\s+["']?(?:https?:|\/\/)/i;
for (const name of ["index.html", "swagger-ui.css", "fleetapi-docs.css"]) {
  const text = readFileSync(join(out, name), "utf8");
  const m = text.match(remote);
  if (m) {
    console.error(`${name}: remote reference ${JSON.stringify(m[0])}`);
    process.exit(1);
  }
}
console.log(`docs UI (swagger-ui-dist ${version}) written to ${out}`);
