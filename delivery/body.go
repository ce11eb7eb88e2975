package delivery

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

// TestMessage is the message of a test delivery's data.
const TestMessage = "A test delivery from fleetapi: the endpoint is reachable and the signature can be checked."

// envelope is a delivery's body (docs/design.md §14): its type, the
// notification's creation time (a test's queueing time), and the data.
type envelope struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// testData is a test delivery's data.
type testData struct {
	WebhookID int64  `json:"webhook_id"`
	Message   string `json:"message"`
}

// notificationBody is the body of a notification's delivery: data is the
// notification exactly as GET /notifications/{id} shows it.
func notificationBody(n storage.Notification) ([]byte, error) {
	return json.Marshal(envelope{Type: storage.DeliveryNotificationType, Timestamp: n.CreatedAt.UTC().Format(time.RFC3339Nano), Data: n})
}

// testBody is the body of a test delivery of the webhook id, queued at
// created.
func testBody(id int64, created time.Time) ([]byte, error) {
	return json.Marshal(envelope{Type: storage.DeliveryTestType, Timestamp: created.UTC().Format(time.RFC3339Nano),
		Data: testData{WebhookID: id, Message: TestMessage}})
}

// aad is the associated data a webhook's secrets are sealed with: its id
// in decimal.
func aad(webhookID int64) []byte { return []byte(strconv.FormatInt(webhookID, 10)) }
