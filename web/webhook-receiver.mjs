// The reference receiver of fleetapi's webhooks (docs/webhooks.md, "For
// integrators"): an HTTP server that verifies every request it gets with
// the Standard Webhooks library nobody on this project wrote
// (npm standardwebhooks, Webhook(secret).verify(body, headers)) against
// each secret it was given, answers 204 when one of them verifies and 400
// when none does, and writes one JSON line per request.
//
//   node web/webhook-receiver.mjs [--secret whsec_...]... [--secrets-file FILE] [--port 0] [--host 127.0.0.1]
//                                 [--log FILE] [--log-bodies]
//
// Secrets come from --secret (repeatable), from WEBHOOK_SECRETS (space or
// comma separated) and from --secrets-file (whitespace separated, read
// again for every request, so a test can register the receiver's URL
// first and hand it the secret it was given, then the new one after a
// rotation). The first line on stdout is {"listening":"HOST:PORT"}
// (port 0 picks a free one); each request then appends to --log (stdout by
// default) {"id", "valid", "type", "verified": [one boolean per secret, in
// the order given], "error" (the library's message for the first secret
// when none verifies), "timestamp" (the webhook-timestamp header), "data_id",
// "created_at" (of the notification), "received_at" (ms since the epoch),
// "status" (the answer)}. A delivery signed during a secret rotation carries
// two signatures: "verified" shows which of the old and new secrets accept
// it. --log-bodies adds the raw "body". SIGTERM or SIGINT stops it.
import { appendFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { Webhook } from "standardwebhooks";

const maxBody = 1 << 20;

const { values } = parseArgs({
  options: {
    secret: { type: "string", multiple: true, default: [] },
    port: { type: "string", default: "0" },
    host: { type: "string", default: "127.0.0.1" },
    "secrets-file": { type: "string" },
    log: { type: "string" },
    "log-bodies": { type: "boolean", default: false },
  },
});
const fixed = [...values.secret, ...(process.env.WEBHOOK_SECRETS ?? "").split(/[\s,]+/).filter((s) => s !== "")];
if (fixed.length === 0 && !values["secrets-file"]) {
  console.error("webhook-receiver: give a secret (--secret whsec_..., WEBHOOK_SECRETS or --secrets-file)");
  process.exit(2);
}

// verifiers are the secrets' verifiers, the file's read now.
const verifiers = () => {
  let secrets = fixed;
  if (values["secrets-file"]) {
    let text = "";
    try {
      text = readFileSync(values["secrets-file"], "utf8");
    } catch {
      // no file yet: no secret from it
    }
    secrets = [...fixed, ...text.split(/\s+/).filter((s) => s !== "")];
  }
  return secrets.map((s) => new Webhook(s));
};

const record = (entry) => {
  const line = `${JSON.stringify(entry)}\n`;
  if (values.log) {
    appendFileSync(values.log, line);
  } else {
    process.stdout.write(line);
  }
};

// judge verifies body with every secret; the payload is the first
// successful verification's parsed JSON.
const judge = (body, headers) => {
  const verified = [];
  let payload;
  let error;
  for (const wh of verifiers()) {
    try {
      const p = wh.verify(body, headers);
      payload ??= p;
      verified.push(true);
    } catch (e) {
      error ??= e.message;
      verified.push(false);
    }
  }
  const valid = verified.includes(true);
  return { valid, verified, payload, error: valid ? undefined : error };
};

const server = createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size <= maxBody) chunks.push(c);
  });
  req.on("end", () => {
    const received_at = Date.now();
    const entry = { id: req.headers["webhook-id"] ?? null, received_at, timestamp: req.headers["webhook-timestamp"] ?? null };
    let status;
    if (req.method !== "POST") {
      status = 405;
      Object.assign(entry, { valid: false, error: `method ${req.method}` });
    } else if (size > maxBody) {
      status = 413;
      Object.assign(entry, { valid: false, error: "body too large" });
    } else {
      const j = judge(Buffer.concat(chunks), req.headers);
      status = j.valid ? 204 : 400;
      Object.assign(entry, {
        valid: j.valid,
        verified: j.verified,
        error: j.error,
        type: j.payload?.type,
        data_id: j.payload?.data?.id,
        created_at: j.payload?.data?.created_at,
      });
      if (values["log-bodies"]) entry.body = Buffer.concat(chunks).toString("utf8");
    }
    entry.status = status;
    record(entry);
    res.writeHead(status).end();
  });
});

server.listen(Number(values.port), values.host, () => {
  const { address, port } = server.address();
  process.stdout.write(`${JSON.stringify({ listening: `${address}:${port}` })}\n`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
