package agent

// CloseHTTPForTest stops the agent's HTTP listener, so that a test proves
// nothing reaches this agent by dialling it: what still answers for it
// goes through the session it opened to a server.
func (a *Agent) CloseHTTPForTest() { a.http.Shutdown() }
