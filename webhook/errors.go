package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Class is the kind of a failed attempt, stable for metrics and alerts.
type Class string

// The classes of Result.Class; Result.Err starts with the class.
const (
	ClassURL      Class = "url"             // the URL is refused (CheckURL)
	ClassDNS      Class = "dns"             // the host name did not resolve
	ClassRefused  Class = "refused address" // it resolved to a refused address
	ClassConnect  Class = "connect"         // no TCP connection
	ClassTLS      Class = "tls"             // the TLS handshake failed
	ClassTimeout  Class = "timeout"         // the attempt took longer than Timeout
	ClassCanceled Class = "canceled"        // the caller's context ended (shutdown): not the receiver's fault
	ClassReset    Class = "reset"           // the connection broke before a response
	ClassRedirect Class = "redirect"        // a 3xx answer (never followed)
	ClassStatus   Class = "status"          // a non-2xx answer
)

func failure(c Class, detail string) Result {
	return Result{Class: c, Err: string(c) + ": " + detail}
}

// classify turns a transport error into a Result with a short, stable text
// that never contains an address, a secret or a body.
func classify(ctx context.Context, err error) Result {
	var refused *refusedError
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordHdr tls.RecordHeaderError
	var tlsAlert tls.AlertError
	var certVerify *tls.CertificateVerificationError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &refused):
		return failure(ClassRefused, refused.why)
	case errors.As(err, &dnsErr):
		switch {
		case dnsErr.IsNotFound:
			return failure(ClassDNS, "no such host")
		case dnsErr.IsTimeout:
			return failure(ClassDNS, "lookup timed out")
		}
		return failure(ClassDNS, "lookup failed")
	case errors.As(err, &hostname):
		return failure(ClassTLS, "certificate is not valid for the host")
	case errors.As(err, &unknownCA):
		return failure(ClassTLS, "certificate signed by an unknown authority")
	case errors.As(err, &invalid):
		return failure(ClassTLS, "certificate is invalid or expired")
	case errors.As(err, &certVerify):
		return failure(ClassTLS, "certificate not verified")
	case errors.As(err, &recordHdr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http turns a record header error that looks like HTTP into an
		// untyped error: its text is the only thing to go by.
		return failure(ClassTLS, "the receiver does not speak TLS")
	case errors.As(err, &tlsAlert), errors.As(err, &opErr) && opErr.Op == "remote error":
		// crypto/tls reports an alert from the peer as a net.OpError with
		// Op "remote error" (with TLS 1.3 possibly after the handshake).
		return failure(ClassTLS, "handshake refused by the receiver")
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return failure(ClassCanceled, "the attempt was abandoned")
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return failure(ClassTimeout, "no complete answer in time")
	case errors.Is(err, syscall.ECONNREFUSED):
		return failure(ClassConnect, "connection refused")
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return failure(ClassConnect, "network unreachable")
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return failure(ClassConnect, "connection failed")
	case errors.Is(err, syscall.ECONNRESET):
		return failure(ClassReset, "connection reset by the receiver")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return failure(ClassReset, "connection closed before an answer")
	}
	return failure(ClassReset, "no valid HTTP answer")
}
