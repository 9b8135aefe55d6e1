package httpapi

// OpenAPI returns the API reference the server serves, for the tests that
// check it.
func OpenAPI() []byte { return openAPI }
