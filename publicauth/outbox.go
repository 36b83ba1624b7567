package publicauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gatehouse-id/gatehouse/internal/aftercommit"
)

// The durable mail outbox. Every mail is written to the store (MailOutbox) in the
// transaction that stores the link token or PIN challenge it carries, sealed, and a worker
// on every replica hands it to the Mailer: at once after the commit, and again with backoff
// while the mailer fails, until the link or PIN in it expires. A mail is deleted once the
// mailer took it, so delivery is at least once: a crash between the mail server's 250 and
// that delete sends it again after the lease passes. The API's answers never depend on the
// mailer.

// DefaultMailRetryInterval is the default Config.MailRetryInterval.
const DefaultMailRetryInterval = 5 * time.Second

const (
	// mailFirstRetry is the wait after the first failed delivery; it doubles with every
	// further failure up to mailMaxRetry.
	mailFirstRetry = 5 * time.Second
	mailMaxRetry   = 5 * time.Minute
	// mailLastTry is how long before its link or PIN expires a mail is tried for the last
	// time: a backoff step that would land later is shortened to it, so an outage that
	// ends minutes before a PIN expires still delivers the PIN.
	mailLastTry = 30 * time.Second
	// mailBatch is how many mails one claim takes, and sends at once.
	mailBatch = 16
	// mailLease is how long a claimed mail is left to one worker: longer than a send may
	// take (mailTimeout), so no two workers send it at the same time.
	mailLease = mailTimeout + 30*time.Second
	// mailKeep is how long a mail's row outlives its link or PIN, so operators can see the
	// mails given up on; the janitor then deletes it.
	mailKeep = 3 * 24 * time.Hour
	// mailShutdownGrace is how long Close lets sends in flight finish before cancelling
	// them (a cancelled one stays queued and is sent again after its lease).
	mailShutdownGrace = 10 * time.Second
	// mailSealInfo is the HKDF info of the key queued mails are sealed under.
	mailSealInfo = "gatehouse publicauth mail outbox v1"
)

// mailOutbox is a Service's side of the outbox: the sealing key and the delivery worker.
type mailOutbox struct {
	aead cipher.AEAD
	// interval is how often the worker looks for due mail; negative: no worker here.
	interval time.Duration
	// delivering serializes delivery passes within the service, so Wait can run one after
	// any the worker is in.
	delivering sync.Mutex
	// stop ends the worker; stopSends cancels the sends in flight; done closes when the
	// worker returned.
	stop, stopSends context.CancelFunc
	sends           context.Context
	done            chan struct{}
	closing         sync.Once
}

// newMailOutbox derives the sealing key from secret (HKDF-SHA-256; its own key, like the
// PIN and cookie keys) and prepares the worker.
func newMailOutbox(secret []byte, interval time.Duration) (*mailOutbox, error) {
	key, err := hkdf.Key(sha256.New, secret, nil, mailSealInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("derive mail key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sends, stopSends := context.WithCancel(context.Background())
	return &mailOutbox{aead: aead, interval: interval,
		sends: sends, stopSends: stopSends, stop: func() {}, done: make(chan struct{})}, nil
}

// seal encrypts m with AES-256-GCM, the mail's id as additional data so a sealed message
// cannot be moved to another row.
func (o *mailOutbox) seal(random io.Reader, id string, m Message) ([]byte, error) {
	plain, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, o.aead.NonceSize())
	if _, err := io.ReadFull(random, nonce); err != nil {
		return nil, err
	}
	return o.aead.Seal(nonce, nonce, plain, []byte(id)), nil
}

// open decrypts the message of q.
func (o *mailOutbox) open(q QueuedMail) (Message, error) {
	n := o.aead.NonceSize()
	if len(q.Sealed) < n {
		return Message{}, fmt.Errorf("%w: too short", errSealed)
	}
	plain, err := o.aead.Open(nil, q.Sealed[:n], q.Sealed[n:], []byte(q.ID))
	if err != nil {
		return Message{}, fmt.Errorf("%w (sealed under another secret?): %v", errSealed, err)
	}
	var m Message
	if err := json.Unmarshal(plain, &m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", errSealed, err)
	}
	return m, nil
}

// errSealed is a queued mail that cannot be opened: retrying would not help.
var errSealed = errors.New("sealed mail cannot be opened")

// queueMail writes m, of kind to the account userID, to the outbox, useless after
// expires. Inside a transaction it is part of it. Once it commits, a delivery pass starts in
// the background under the caller's context (its trace, not its cancellation), so the
// first attempt follows at once and its span belongs to the request that asked for it.
func (s *Service) queueMail(ctx context.Context, kind, userID string, m Message, expires time.Time) error {
	id, err := s.newToken()
	if err != nil {
		return err
	}
	sealed, err := s.outbox.seal(s.random, id, m)
	if err != nil {
		return fmt.Errorf("publicauth: seal %s mail: %w", kind, err)
	}
	q := &QueuedMail{ID: id, Kind: kind, UserID: userID, Sealed: sealed, CreatedAt: s.now(),
		MailExpiresAt: expires, PurgeAt: expires.Add(mailKeep)}
	if err := s.store.EnqueueMail(ctx, q); err != nil {
		return fmt.Errorf("publicauth: queue %s mail: %w", kind, err)
	}
	if s.outbox.interval >= 0 {
		aftercommit.Do(ctx, func(ctx context.Context) {
			ctx = context.WithoutCancel(ctx)
			s.mailing.Go(func() { s.deliverMail(ctx) })
		})
	}
	return nil
}

// startMailDelivery starts the worker unless the interval turns it off.
func (s *Service) startMailDelivery() {
	o := s.outbox
	if o.interval < 0 {
		close(o.done)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	o.stop = stop
	go func() {
		defer close(o.done)
		ticker := time.NewTicker(o.interval)
		defer ticker.Stop()
		for {
			// First at start: mails a previous process left are due now.
			s.deliverMail(ctx)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// deliverMail claims and sends the due mails, batch after batch, until none is left, ctx
// is done or the service closes.
func (s *Service) deliverMail(ctx context.Context) {
	s.outbox.delivering.Lock()
	defer s.outbox.delivering.Unlock()
	for ctx.Err() == nil && s.outbox.sends.Err() == nil {
		mails, err := s.store.ClaimMail(ctx, s.now(), mailLease, mailBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.ErrorContext(ctx, "publicauth: cannot read the mail outbox", "error", err)
			}
			return
		}
		var wg sync.WaitGroup
		for _, q := range mails {
			wg.Go(func() { s.deliverOne(ctx, q) })
		}
		wg.Wait()
		if len(mails) < mailBatch {
			return
		}
	}
}

// deliverOne sends one claimed mail and records the outcome: delivered mails are deleted;
// failed ones are tried again with exponential backoff, and given up on once their link or
// PIN has (mailLastTry before its expiry, the last try, is past). Only the kind, id, account and error
// are logged, never the message.
func (s *Service) deliverOne(ctx context.Context, q QueuedMail) {
	log := s.logger.With("kind", q.Kind, "mail_id", q.ID, "user_id", q.UserID, "attempt", q.Attempts)
	now := s.now()
	var sendErr error
	if !now.Before(q.MailExpiresAt) {
		sendErr = errors.New("its link or PIN expired before it could be delivered")
	} else if m, err := s.outbox.open(q); err != nil {
		sendErr = err
	} else {
		// ctx's values (its trace), not its end: Close cancels sends through o.sends,
		// after a grace period.
		sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mailTimeout)
		stop := context.AfterFunc(s.outbox.sends, cancel)
		sendErr = s.mailer.Send(sendCtx, m)
		stop()
		cancel()
		if sendErr == nil {
			if err := s.store.MailDelivered(context.WithoutCancel(ctx), q.ID); err != nil {
				// Sent but still queued: it goes out again once its lease passes.
				log.ErrorContext(ctx, "publicauth: mail sent, but not removed from the outbox", "error", err)
			}
			return
		}
		if s.outbox.sends.Err() != nil {
			return // shutting down: the mail stays queued and is tried after its lease
		}
		now = s.now()
	}
	next := now.Add(mailBackoff(q.Attempts))
	if last := q.MailExpiresAt.Add(-mailLastTry); next.After(last) {
		next = last
	}
	giveUp := !next.After(now) || errors.Is(sendErr, errSealed)
	if giveUp {
		log.ErrorContext(ctx, "publicauth: mail given up", "error", sendErr, "queued_at", q.CreatedAt)
	} else {
		log.WarnContext(ctx, "publicauth: sending mail failed, will retry", "error", sendErr, "next", next)
	}
	if err := s.store.MailFailed(context.WithoutCancel(ctx), q.ID, sendErr.Error(), next, giveUp, now); err != nil {
		log.ErrorContext(ctx, "publicauth: cannot record a failed mail", "error", err)
	}
}

// mailBackoff is the wait after the given number of failed attempts: mailFirstRetry,
// doubling, at most mailMaxRetry.
func mailBackoff(attempts int) time.Duration {
	d := mailFirstRetry
	for i := 1; i < attempts && d < mailMaxRetry; i++ {
		d *= 2
	}
	return min(d, mailMaxRetry)
}

// Wait blocks until every mail accepted so far is in the outbox and, unless
// Config.MailRetryInterval turns delivery off here, has had a delivery attempt: it waits
// for the mails being prepared and sent in the background and then delivers what is due.
// Tests call it before they look for a mail.
func (s *Service) Wait() {
	s.mailing.Wait()
	if s.outbox.interval >= 0 {
		s.deliverMail(context.Background())
	}
}

// Close stops the mail delivery worker once the mails being prepared in the background
// are in the outbox; sends in flight get up to 10 seconds to finish, and whatever is not
// delivered stays queued for the next start (or another replica). Call it on shutdown.
// The service answers requests after Close, but delivers no more mail. Close also unmaps
// the memory kept for password hashes (a later hash maps its own).
func (s *Service) Close() {
	s.kdf.Close()
	o := s.outbox
	o.closing.Do(func() {
		grace := time.AfterFunc(mailShutdownGrace, o.stopSends)
		defer grace.Stop()
		s.mailing.Wait()
		o.stop()
		<-o.done
		o.stopSends()
	})
}

// MailQueue returns the state of the mail outbox, for metrics: the mails still to deliver,
// those due now, and those given up on whose rows are still kept.
func (s *Service) MailQueue(ctx context.Context) (MailQueue, error) {
	return s.store.MailQueueState(ctx, s.now())
}
