package api

import (
	"context"
	"time"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// registerNotifications declares GET /notifications (a list route of the
// notifications resource, newest first), GET /notifications/{id} and GET
// /notifications/stream (notifystream.go) (docs/design.md §14).
func (s *Server) registerNotifications(g *fuego.Server) {
	path := "/" + string(storage.Notifications.Resource())
	scope := func(ctx context.Context) (policy.Scope, error) {
		return s.scopeFor(ctx, storage.Notifications.Resource())
	}
	fuego.Get(g, path, listHandler(s, path, storage.Notifications, same[storage.Notification], notificationsRange, scope),
		routeOptions(authErrors(), listParams(storage.Notifications.Descriptor, path), []fuego.RouteOption{
			fuego.OptionOperationID("get_notifications"), fuego.OptionTags("Events"),
			fuego.OptionSummary("Paged list of notifications"),
			fuego.OptionDescription("What fired: the notifications of the event rules and service records the caller may see, " +
				"newest first by default (sort id, order desc). from and to bound time to [from, to). " +
				"Needs the token permission GET /notifications; a subaccount also needs the event_notifications privilege " +
				"and sees the notifications of the devices granted to it."),
			respondsPage(notificationSchema(), []storage.Notification{exampleNotification()}),
		})...)
	fuego.Get(g, path+"/{id}", s.getNotification, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_notification"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Read one notification"),
		fuego.OptionDescription("One notification by id. A notification outside the caller's scope is 404, like one that does not exist. " +
			"Needs the token permission GET /notifications/{id}; a subaccount also needs the event_notifications privilege."),
		respondsOne(notificationSchema(), exampleNotification()),
	}, pathID("id", "Notification id.", exampleNotification().ID))...)
	s.registerNotificationStream(g)
}

// notificationsRange completes a request of GET /notifications (newest
// first by the descriptor's default order): a range whose to is not after
// its from is refused.
func notificationsRange(_ string, req *storage.ListRequest) error {
	var from, to *time.Time
	for _, f := range req.Filters {
		t, _ := f.Value.(time.Time)
		switch f.Op {
		case storage.FilterFrom:
			from = &t
		case storage.FilterTo:
			to = &t
		}
	}
	if from != nil && to != nil && !to.After(*from) {
		return invalidParam(paramTo, "must be after from")
	}
	return nil
}

// getNotification answers GET /notifications/{id}. A notification outside
// the caller's scope is NOT_FOUND, exactly like one that does not exist.
func (s *Server) getNotification(c fuego.ContextNoBody) (*Envelope[storage.Notification], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Notifications.Resource())
	if err != nil {
		return nil, err
	}
	n, err := s.cfg.Store.NotificationByID(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return &Envelope[storage.Notification]{Data: n}, nil
}

// notificationSchema is the Notification component.
func notificationSchema() wireType {
	return wireType{name: "Notification", value: storage.Notification{}, description: "What fired: one notification of an event rule or a service record (docs/design.md §14).",
		fields: map[string][]fieldOpt{
			"id":         {desc("Id of the notification; the id: of its Server-Sent Event."), minimum(1)},
			"account_id": {desc("The account owning the rule or service record that fired."), minimum(1)},
			"event_id":   {desc("The event rule that fired; null for a service notification."), minimum(1)},
			"service_id": {desc("The service record that fired; null for an event rule's notification."), minimum(1)},
			"type":       {desc(`Kind of notification: the event rule's type (for example "overspeed"), or service_soon, service_expired.`)},
			"imei":       {desc("IMEI of the device.")},
			"object_id":  {desc("Id of the device."), minimum(1)},
			"time":       {desc("The reading's time, or the clock's for a service notification.")},
			"created_at": {desc("When the notification was stored.")},
			"value":      {desc("The value that fired the rule, as text (for example the speed).")},
			"lat":        {desc("Latitude of the reading, or null.")},
			"lon":        {desc("Longitude of the reading, or null.")},
			"message":    {desc("Human-readable text of the notification.")},
		}}
}

// exampleNotification is the notification of the examples; its id is the
// example of the path parameter of GET /notifications/{id}.
func exampleNotification() storage.Notification {
	event, lat, lon := int64(4), 48.8566, 2.3522
	at := time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)
	return storage.Notification{ID: 1042, AccountID: 14, EventID: &event, Type: "overspeed", IMEI: "356938035643809", ObjectID: 21,
		Time: at, CreatedAt: at.Add(120 * time.Millisecond), Value: "97", Lat: &lat, Lon: &lon, Message: "Overspeed: 97 km/h"}
}
