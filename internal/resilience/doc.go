// Package resilience holds the end-to-end tests that prove the service
// keeps its promises when things go wrong: the database becoming
// unreachable, the SMTP relay going down, the server stopped or killed
// mid-work, two servers sharing one database. They drive the real
// server over HTTP, with real PostgreSQL or SQLite and a real SMTP
// server; the package has no code of its own.
package resilience
