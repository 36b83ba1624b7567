package main

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"

	"github.com/gatehouse-id/gatehouse/provider"
)

// acmeUser is a row of the company's own users table, which predates Gatehouse: bigint ids,
// bcrypt password hashes.
type acmeUser struct {
	ID            int64
	Email         string
	Name          string
	PasswordHash  string
	EmailVerified bool
	Disabled      bool
	Department    string
}

func (acmeUser) TableName() string { return "users" }

// account is how Gatehouse sees a company user. The department travels as a claim.
func (u *acmeUser) account() *provider.Account {
	return &provider.Account{
		ID:            strconv.FormatInt(u.ID, 10),
		Email:         u.Email,
		EmailVerified: u.EmailVerified,
		Name:          u.Name,
		Disabled:      u.Disabled,
		Claims:        map[string]any{"department": u.Department},
	}
}

// acmeAccounts lets Gatehouse log in the company's users: it implements provider.Accounts
// over the users table and nothing else, so registration and password resets stay with
// the company's own tools (Gatehouse answers those routes with "not available").
type acmeAccounts struct {
	db *gorm.DB
	// dummyHash is compared against when no user has the address, so an unknown address
	// costs as much as a wrong password and timing tells nothing.
	dummyHash []byte
}

func newAcmeAccounts(db *gorm.DB) (*acmeAccounts, error) {
	dummy, err := bcrypt.GenerateFromPassword([]byte("not a password anyone has"), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	return &acmeAccounts{db: db, dummyHash: dummy}, nil
}

var _ provider.Accounts = (*acmeAccounts)(nil)

// AccountByID finds a user by the id Gatehouse got from AccountByEmail or Authenticate.
func (a *acmeAccounts) AccountByID(ctx context.Context, id string) (*provider.Account, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, provider.ErrAccountNotFound
	}
	return a.find(ctx, "id = ?", n)
}

// AccountByEmail finds a user by address, ignoring case as the company's sign-up does.
func (a *acmeAccounts) AccountByEmail(ctx context.Context, email string) (*provider.Account, error) {
	return a.find(ctx, "lower(email) = ?", strings.ToLower(email))
}

// Authenticate checks a password against the company's bcrypt hash.
func (a *acmeAccounts) Authenticate(ctx context.Context, email, password string) (*provider.Account, error) {
	var u acmeUser
	err := a.db.WithContext(ctx).Where("lower(email) = ?", strings.ToLower(email)).Take(&u).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		_ = bcrypt.CompareHashAndPassword(a.dummyHash, []byte(password))
		return nil, provider.ErrBadCredentials
	case err != nil:
		return nil, err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return nil, provider.ErrBadCredentials
	}
	return u.account(), nil
}

func (a *acmeAccounts) find(ctx context.Context, query string, arg any) (*provider.Account, error) {
	var u acmeUser
	err := a.db.WithContext(ctx).Where(query, arg).Take(&u).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, provider.ErrAccountNotFound
	case err != nil:
		return nil, err
	}
	return u.account(), nil
}

// addUser creates a company user (the example's add-user command and its tests).
func addUser(ctx context.Context, db *gorm.DB, email, name, password, department string) (int64, error) {
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return 0, err
	}
	u := acmeUser{Email: email, Name: name, PasswordHash: string(hash), EmailVerified: true, Department: department}
	if err := db.WithContext(ctx).Create(&u).Error; err != nil {
		return 0, err
	}
	return u.ID, nil
}
