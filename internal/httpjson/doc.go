// Package httpjson holds the JSON shapes and body decoding every JSON surface of Gatehouse
// shares: the application error body, the headers of a JSON answer, the request faults found
// before a service is called (415, 413, 400), and the store's outage mark that every error
// table maps to 503. Each domain package keeps its own error table and messages; only these
// mechanics live here.
package httpjson
