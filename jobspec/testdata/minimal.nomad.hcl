job "hello" {
  group "g" {
    task "t" {
      driver = "mock_driver"
    }
  }
}
