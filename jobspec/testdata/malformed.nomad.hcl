job "example" {
  group "web" {
    count = 
  }
}
