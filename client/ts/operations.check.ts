// Type-level coverage of the client (checked by `tsc --strict` in
// .ci/openapi-lint, never run): one typed call of every operation of the
// OpenAPI document. `satisfies Coverage` fails to compile when an
// operation of schema.d.ts has no entry here or an entry names none, and
// the entry of "METHOD /path" is given openapi-fetch's path-based client
// of that path with that method only, so it can call no other operation.
// (At run time: everyOperation[k](wrapAsPathBasedClient(client)[path]).)
import type { ClientForPath } from "openapi-fetch";
import type { paths } from "./client";

type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";

/** "GET /accounts", "POST /accounts", … : every operation of the document. */
export type OperationKey = {
  [P in keyof paths]: {
    [M in HttpMethod]-?: [NonNullable<paths[P][M]>] extends [never]
      ? never
      : `${Uppercase<M>} ${P & string}`;
  }[HttpMethod];
}[keyof paths];

/** The client of one operation: its path's client with only its method. */
export type OperationClient<K extends OperationKey> =
  K extends `${infer M} ${infer P extends keyof paths}`
    ? Pick<ClientForPath<paths[P], `${string}/${string}`>, M & keyof ClientForPath<paths[P], `${string}/${string}`>>
    : never;

type Coverage = { [K in OperationKey]: (c: OperationClient<K>) => Promise<unknown> };

const id = { params: { path: { id: 1 } } };

export const everyOperation = {
  "GET /accounts": (c) => c.GET(),
  "POST /accounts": (c) => c.POST({ body: { username: "fleet-user", type: "user" } }),
  "DELETE /accounts/{id}": (c) => c.DELETE(id),
  "GET /accounts/{id}": (c) => c.GET(id),
  "PATCH /accounts/{id}": (c) => c.PATCH({ ...id, body: {} }),
  "GET /accounts/{id}/objects": (c) => c.GET(id),
  "PUT /accounts/{id}/objects": (c) =>
    c.PUT({ ...id, body: { imei: ["356307042441013"] } }),
  "GET /audit-events": (c) => c.GET(),
  "GET /events": (c) => c.GET(),
  "POST /events": (c) => c.POST({ body: { type: "overspeed", name: "speeding" } }),
  "DELETE /events/{id}": (c) => c.DELETE(id),
  "GET /events/{id}": (c) => c.GET(id),
  "PATCH /events/{id}": (c) => c.PATCH({ ...id, body: {} }),
  "GET /me": (c) => c.GET(),
  "GET /notifications": (c) => c.GET(),
  "GET /notifications/stream": (c) => c.GET({ parseAs: "stream" }),
  "GET /notifications/{id}": (c) => c.GET(id),
  "GET /objects": (c) => c.GET(),
  "POST /objects": (c) =>
    c.POST({ body: { imei: "356307042441013", account_id: 1 } }),
  "GET /objects/{id}": (c) => c.GET(id),
  "PATCH /objects/{id}": (c) => c.PATCH({ ...id, body: { account_id: 1 } }),
  "GET /objects/{id}/positions": (c) => c.GET(id),
  "POST /passengers": (c) => c.POST({ body: { passenger_name: "A. Rider" } }),
  "POST /readings": (c) => c.POST({ body: { readings: [] } }),
  "GET /reports": (c) => c.GET(),
  "POST /reports": (c) => c.POST({ body: { name: "daily" } }),
  "DELETE /reports/{id}": (c) => c.DELETE(id),
  "PATCH /reports/{id}": (c) => c.PATCH({ ...id, body: {} }),
  "GET /services": (c) => c.GET(),
  "POST /services": (c) =>
    c.POST({ body: { imei: "356307042441013", name: "oil change" } }),
  "GET /services/due": (c) => c.GET(),
  "DELETE /services/{id}": (c) => c.DELETE(id),
  "PATCH /services/{id}": (c) => c.PATCH({ ...id, body: {} }),
  "POST /services/{id}/done": (c) => c.POST({ ...id, body: {} }),
  "GET /tokens": (c) => c.GET(),
  "POST /tokens": (c) =>
    c.POST({ body: { name: "reader", permissions: ["GET /objects"] } }),
  "DELETE /tokens/{id}": (c) => c.DELETE(id),
  "GET /usage": (c) => c.GET(),
  "GET /webhooks": (c) => c.GET(),
  "POST /webhooks": (c) => c.POST({ body: { url: "https://hooks.example.com/fleet" } }),
  "DELETE /webhooks/{id}": (c) => c.DELETE(id),
  "GET /webhooks/{id}": (c) => c.GET(id),
  "PATCH /webhooks/{id}": (c) => c.PATCH({ ...id, body: {} }),
  "GET /webhooks/{id}/deliveries": (c) => c.GET(id),
  "POST /webhooks/{id}/deliveries/{delivery_id}/retry": (c) =>
    c.POST({
      params: { path: { id: 1, delivery_id: 2 } },
    }),
  "POST /webhooks/{id}/rotate-secret": (c) => c.POST(id),
  "POST /webhooks/{id}/test": (c) => c.POST(id),
  "GET /zones": (c) => c.GET(),
  "POST /zones": (c) =>
    c.POST({ body: { name: "depot", kind: "circle", center: { lat: 52.52, lon: 13.4 }, radius_m: 200 } }),
  "DELETE /zones/{id}": (c) => c.DELETE(id),
  "GET /zones/{id}": (c) => c.GET(id),
  "PATCH /zones/{id}": (c) => c.PATCH({ ...id, body: {} }),
} satisfies Coverage;
