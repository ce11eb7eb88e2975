// Type-level coverage of the client (checked by `tsc --strict` in
// .ci/openapi-lint, never run): one typed call of every operation of the
// OpenAPI document. `satisfies Coverage` fails to compile when an
// operation of schema.d.ts has no entry here or an entry names none.
import type { FleetClient, paths } from "./client";

type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";

/** "GET /accounts", "POST /accounts", … : every operation of the document. */
export type OperationKey = {
  [P in keyof paths]: {
    [M in HttpMethod]-?: [NonNullable<paths[P][M]>] extends [never]
      ? never
      : `${Uppercase<M>} ${P & string}`;
  }[HttpMethod];
}[keyof paths];

type Coverage = Record<OperationKey, (c: FleetClient) => Promise<unknown>>;

const id = { params: { path: { id: 1 } } } as const;

export const everyOperation = {
  "GET /accounts": (c) => c.GET("/accounts"),
  "POST /accounts": (c) => c.POST("/accounts", { body: { username: "fleet-user", type: "user" } }),
  "DELETE /accounts/{id}": (c) => c.DELETE("/accounts/{id}", id),
  "GET /accounts/{id}": (c) => c.GET("/accounts/{id}", id),
  "PATCH /accounts/{id}": (c) => c.PATCH("/accounts/{id}", { ...id, body: {} }),
  "GET /accounts/{id}/objects": (c) => c.GET("/accounts/{id}/objects", id),
  "PUT /accounts/{id}/objects": (c) =>
    c.PUT("/accounts/{id}/objects", { ...id, body: { imei: ["356307042441013"] } }),
  "GET /audit-events": (c) => c.GET("/audit-events"),
  "GET /events": (c) => c.GET("/events"),
  "POST /events": (c) => c.POST("/events", { body: { type: "overspeed", name: "speeding" } }),
  "DELETE /events/{id}": (c) => c.DELETE("/events/{id}", id),
  "GET /events/{id}": (c) => c.GET("/events/{id}", id),
  "PATCH /events/{id}": (c) => c.PATCH("/events/{id}", { ...id, body: {} }),
  "GET /me": (c) => c.GET("/me"),
  "GET /notifications": (c) => c.GET("/notifications"),
  "GET /notifications/stream": (c) => c.GET("/notifications/stream", { parseAs: "stream" }),
  "GET /notifications/{id}": (c) => c.GET("/notifications/{id}", id),
  "GET /objects": (c) => c.GET("/objects"),
  "POST /objects": (c) =>
    c.POST("/objects", { body: { imei: "356307042441013", account_id: 1 } }),
  "GET /objects/{id}": (c) => c.GET("/objects/{id}", id),
  "PATCH /objects/{id}": (c) => c.PATCH("/objects/{id}", { ...id, body: { account_id: 1 } }),
  "GET /objects/{id}/positions": (c) => c.GET("/objects/{id}/positions", id),
  "POST /passengers": (c) => c.POST("/passengers", { body: { passenger_name: "A. Rider" } }),
  "POST /readings": (c) => c.POST("/readings", { body: { readings: [] } }),
  "GET /reports": (c) => c.GET("/reports"),
  "POST /reports": (c) => c.POST("/reports", { body: { name: "daily" } }),
  "DELETE /reports/{id}": (c) => c.DELETE("/reports/{id}", id),
  "PATCH /reports/{id}": (c) => c.PATCH("/reports/{id}", { ...id, body: {} }),
  "GET /services": (c) => c.GET("/services"),
  "POST /services": (c) =>
    c.POST("/services", { body: { imei: "356307042441013", name: "oil change" } }),
  "GET /services/due": (c) => c.GET("/services/due"),
  "DELETE /services/{id}": (c) => c.DELETE("/services/{id}", id),
  "PATCH /services/{id}": (c) => c.PATCH("/services/{id}", { ...id, body: {} }),
  "POST /services/{id}/done": (c) => c.POST("/services/{id}/done", { ...id, body: {} }),
  "GET /tokens": (c) => c.GET("/tokens"),
  "POST /tokens": (c) =>
    c.POST("/tokens", { body: { name: "reader", permissions: ["GET /objects"] } }),
  "DELETE /tokens/{id}": (c) => c.DELETE("/tokens/{id}", id),
  "GET /usage": (c) => c.GET("/usage"),
  "GET /webhooks": (c) => c.GET("/webhooks"),
  "POST /webhooks": (c) => c.POST("/webhooks", { body: { url: "https://hooks.example.com/fleet" } }),
  "DELETE /webhooks/{id}": (c) => c.DELETE("/webhooks/{id}", id),
  "GET /webhooks/{id}": (c) => c.GET("/webhooks/{id}", id),
  "PATCH /webhooks/{id}": (c) => c.PATCH("/webhooks/{id}", { ...id, body: {} }),
  "GET /webhooks/{id}/deliveries": (c) => c.GET("/webhooks/{id}/deliveries", id),
  "POST /webhooks/{id}/deliveries/{delivery_id}/retry": (c) =>
    c.POST("/webhooks/{id}/deliveries/{delivery_id}/retry", {
      params: { path: { id: 1, delivery_id: 2 } },
    }),
  "POST /webhooks/{id}/rotate-secret": (c) => c.POST("/webhooks/{id}/rotate-secret", id),
  "POST /webhooks/{id}/test": (c) => c.POST("/webhooks/{id}/test", id),
  "GET /zones": (c) => c.GET("/zones"),
  "POST /zones": (c) =>
    c.POST("/zones", { body: { name: "depot", kind: "circle", center: { lat: 52.52, lon: 13.4 }, radius_m: 200 } }),
  "DELETE /zones/{id}": (c) => c.DELETE("/zones/{id}", id),
  "GET /zones/{id}": (c) => c.GET("/zones/{id}", id),
  "PATCH /zones/{id}": (c) => c.PATCH("/zones/{id}", { ...id, body: {} }),
} satisfies Coverage;
